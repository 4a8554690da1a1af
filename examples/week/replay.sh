#!/usr/bin/env bash
# Replays one week of conversation through journal -> sleep -> wake, with the clock set by
# MEMDIR_NOW, so you can see what each document looks like after a week of use.
#
#   examples/week/replay.sh [DIR]      (default: a fresh examples/week/memdir)
#
# Every turn is stored verbatim with `memdir journal add --jsonl`; teachings, inferences,
# confirmations and recalls happen on the days they would; `memdir sleep` runs every night at
# 03:00 (its summaries go to output/sleep.log); on the next Monday morning the script saves
# `memdir wake`, the boot document, the journal and one memory's decay in output/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
memdir=${MEMDIR_BIN:-memdir}
dir=${1:-$here/memdir}
out=$here/output
rm -rf "$dir" "$out" && mkdir -p "$out"
$memdir init "$dir" >/dev/null
export MEMDIR=$dir COLUMNS=100
sed -i 's/^  timezone: UTC$/  timezone: Europe\/Lisbon/' "$dir/memdir.yaml"
at() { export MEMDIR_NOW="$1"; }
say() { $memdir journal add --jsonl --session "$1" >/dev/null; }  # turns as JSONL on stdin
night() { at "$1T03:00:00Z"; echo "== night before $1" >>"$out/sleep.log"; $memdir sleep >>"$out/sleep.log"; }

# Monday: marathon plans, two teachings, one guess.
at 2026-05-04T08:40:00Z
say mon-am <<'JSONL'
{"role": "user", "text": "Morning! I signed up for the Porto marathon in October. Slightly terrified.", "at": "2026-05-04T08:30:00Z"}
{"role": "assistant", "text": "Congratulations! October gives you about 22 weeks, enough for a gentle base-building plan.", "at": "2026-05-04T08:31:00Z"}
{"role": "user", "text": "I can run three mornings a week, never before 7am. Long runs on Sundays.", "at": "2026-05-04T08:33:00Z"}
{"role": "assistant", "text": "Then: two easy runs midweek and a long run on Sunday, adding ten percent a week.", "at": "2026-05-04T08:35:00Z"}
JSONL
$memdir teach "I can run three mornings a week, never before 7am; long runs on Sundays" --type RULE:schedule --key running-schedule >/dev/null
$memdir teach "I take my coffee black, no sugar" --type FACT:preference --key coffee >/dev/null
$memdir infer "Sam is anxious about the marathon and may want encouragement" --ttl 7d >/dev/null
at 2026-05-04T21:10:00Z
say mon-pm <<'JSONL'
{"role": "user", "text": "My knee has been aching after runs, I have not told anyone yet.", "at": "2026-05-04T21:05:00Z", "visibility": "private"}
{"role": "assistant", "text": "Thank you for telling me. If it persists, a physiotherapist can check it before the mileage grows.", "at": "2026-05-04T21:06:00Z", "visibility": "private"}
JSONL
night 2026-05-05

# Tuesday: a bad day at work, and a secret that must never be summarised.
at 2026-05-05T18:30:00Z
say tue <<'JSONL'
{"role": "user", "text": "Awful day. The Q2 migration deadline slipped again and my manager blamed our team.", "at": "2026-05-05T18:20:00Z"}
{"role": "assistant", "text": "That sounds exhausting and unfair. Do you want to plan how to raise it with your manager?", "at": "2026-05-05T18:21:00Z"}
{"role": "user", "text": "Maybe tomorrow. The VPN password is hunter2-lisbon, remind me if I ask.", "at": "2026-05-05T18:24:00Z", "secrecy": "secret"}
{"role": "user", "text": "For now I just want to skip tonight's run and sleep early.", "at": "2026-05-05T18:26:00Z"}
JSONL
night 2026-05-06

# Wednesday: the balcony garden, an explicit topic.
at 2026-05-06T19:00:00Z
say wed <<'JSONL'
{"role": "user", "text": "I planted basil and cherry tomatoes on the balcony today.", "at": "2026-05-06T18:40:00Z", "topic": "balcony garden"}
{"role": "assistant", "text": "Lovely. The balcony faces south, so the tomatoes will want water every evening in summer.", "at": "2026-05-06T18:41:00Z", "topic": "balcony garden"}
{"role": "user", "text": "The basil already smells amazing. Gardening calms me down after work.", "at": "2026-05-06T18:45:00Z", "topic": "balcony garden"}
JSONL
$memdir teach "My sister Ana is visiting on Saturday" --store episodic >/dev/null
night 2026-05-07

# Thursday: recall rehearses the plan; Sam confirms the guess; coffee changes.
at 2026-05-07T07:45:00Z
$memdir recall "what is my running schedule?" >/dev/null 2>&1
marathon=$($memdir list --status provisional --json | python3 -c 'import json,sys; print(next(m["id"] for m in json.load(sys.stdin) if "marathon" in m["text"]))')
say thu <<'JSONL'
{"role": "user", "text": "Yes, honestly I do want encouragement for the marathon, it helps.", "at": "2026-05-07T07:40:00Z"}
{"role": "user", "text": "Also I switched to oat milk flat whites, black coffee was too harsh before runs.", "at": "2026-05-07T07:42:00Z"}
JSONL
$memdir confirm "$marathon" --evidence "Yes, honestly I do want encouragement for the marathon" >/dev/null
$memdir teach "I switched to oat milk flat whites" --type FACT:preference --key coffee >/dev/null
night 2026-05-08

# Friday: a guess with a short fuse (it will expire unconfirmed), and a reflection.
at 2026-05-08T17:30:00Z
say fri <<'JSONL'
{"role": "user", "text": "The migration finally shipped! I feel relieved and proud of the team.", "at": "2026-05-08T17:20:00Z"}
{"role": "assistant", "text": "Well deserved. Maybe celebrate with Ana on Saturday?", "at": "2026-05-08T17:21:00Z"}
JSONL
$memdir infer "Sam prefers not to talk about work on weekends" --ttl 2d >/dev/null
echo "Sam's week turned around: the migration shipped and he sounded proud. Marathon training is on track; ask about the knee only if he raises it." \
  | $memdir journal write - >/dev/null
night 2026-05-09

# Saturday: Ana visits, back to the balcony.
at 2026-05-09T16:00:00Z
say sat <<'JSONL'
{"role": "user", "text": "Ana loved the balcony garden, we ate basil pasta with the first tomatoes.", "at": "2026-05-09T15:50:00Z", "topic": "balcony garden"}
{"role": "assistant", "text": "That sounds like a perfect afternoon. The tomatoes grew fast!", "at": "2026-05-09T15:51:00Z", "topic": "balcony garden"}
JSONL
night 2026-05-10

# Sunday: the first long run.
at 2026-05-10T10:30:00Z
say sun <<'JSONL'
{"role": "user", "text": "Did my first long run, 14 km along the river. Knees were fine!", "at": "2026-05-10T10:20:00Z"}
{"role": "assistant", "text": "Great pace for a first long run. Next Sunday, 15 km.", "at": "2026-05-10T10:21:00Z"}
JSONL
night 2026-05-11

# Monday morning: what the assistant reads before the next conversation.
at 2026-05-11T07:30:00Z
$memdir wake --budget 900 >"$out/wake.md" 2>/dev/null
cp "$dir/documents/boot.md" "$out/boot.md"
$memdir journal read >"$out/journal.txt"
$memdir journal read --entries >"$out/entries.md"
schedule=$($memdir list --json | python3 -c 'import json,sys; print(next(m["id"] for m in json.load(sys.stdin) if m["text"].startswith("I can run")))')
$memdir decay "$schedule" >"$out/decay.txt"
$memdir verify 2>>"$out/sleep.log"
echo "replayed a week into $dir; outputs in $out"
