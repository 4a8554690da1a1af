#!/usr/bin/env bash
# Replays one week of conversation through journal -> sleep -> wake, with the clock set by
# MEMDIR_NOW, so you can see what each document looks like after a week of use.
#
#   examples/week/replay.sh [DIR]      (default: a fresh examples/week/memdir)
#
# The conversations are in conversations.jsonl beside it, one turn a line with its session;
# `say SESSION` stores that session's turns verbatim with `memdir journal add --jsonl`, `talk
# TIME SESSION` does so at that time.
# Teachings, inferences, confirmations and recalls happen on the days they would; `memdir sleep`
# runs every night at 03:00 (its summaries go to output/sleep.log); on the next Monday morning
# the script saves `memdir wake`, the boot document, the journal and one memory's decay in
# output/.
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
say() { grep -F "\"session\": \"$1\"," "$here/conversations.jsonl" | $memdir journal add --jsonl >/dev/null; }  # one session's turns
talk() { at "$1"; say "$2"; }  # at that time, that session
night() { at "$1T03:00:00Z"; echo "== night before $1" >>"$out/sleep.log"; $memdir sleep >>"$out/sleep.log"; }

# Monday: marathon plans, two teachings, one guess.
talk 2026-05-04T08:40:00Z mon-am
$memdir teach "I can run three mornings a week, never before 7am; long runs on Sundays" --type RULE:schedule --key running-schedule >/dev/null
$memdir teach "I take my coffee black, no sugar" --type FACT:preference --key coffee >/dev/null
$memdir infer "Sam is anxious about the marathon and may want encouragement" --ttl 7d >/dev/null
talk 2026-05-04T21:10:00Z mon-pm
night 2026-05-05

# Tuesday: a bad day at work, and a secret that must never be summarised.
talk 2026-05-05T18:30:00Z tue
night 2026-05-06

# Wednesday: the balcony garden, an explicit topic.
talk 2026-05-06T19:00:00Z wed
$memdir teach "My sister Ana is visiting on Saturday" --store episodic >/dev/null
night 2026-05-07

# Thursday: recall rehearses the plan; Sam confirms the guess; coffee changes.
at 2026-05-07T07:45:00Z
$memdir recall "what is my running schedule?" >/dev/null 2>&1
marathon=$($memdir list --status provisional --json | python3 -c 'import json,sys; print(next(m["id"] for m in json.load(sys.stdin) if "marathon" in m["text"]))')
say thu
$memdir confirm "$marathon" --evidence "Yes, honestly I do want encouragement for the marathon" >/dev/null
$memdir teach "I switched to oat milk flat whites" --type FACT:preference --key coffee >/dev/null
night 2026-05-08

# Friday: a guess with a short fuse (it will expire unconfirmed), and a reflection.
talk 2026-05-08T17:30:00Z fri
$memdir infer "Sam prefers not to talk about work on weekends" --ttl 2d >/dev/null
echo "Sam's week turned around: the migration shipped and he sounded proud. Marathon training is on track; ask about the knee only if he raises it." \
  | $memdir journal write - >/dev/null
night 2026-05-09

# Saturday: Ana visits, back to the balcony.
talk 2026-05-09T16:00:00Z sat
night 2026-05-10

# Sunday: the first long run.
talk 2026-05-10T10:30:00Z sun
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
