#!/usr/bin/env bash
# Rebuilds examples/memdir, the small memdir `make demo` runs on: a few weeks of one user's
# teachings, the assistant's inferences (one confirmed, one rejected, one left to expire) and
# a superseded fact. Times are fixed with MEMDIR_NOW, so the ids are the same on every run.
set -euo pipefail
cd "$(dirname "$0")"
memdir=${MEMDIR_BIN:-memdir}
rm -rf memdir
$memdir init memdir >/dev/null
export MEMDIR=$PWD/memdir
at() { export MEMDIR_NOW="$1"; }

at 2026-10-01T09:00:00Z
$memdir teach "My name is Sam and I work as a backend engineer at a logistics startup" --type FACT:identity --importance 8 >/dev/null
$memdir teach "I take my coffee black, no sugar" --type FACT:preference --key coffee >/dev/null
$memdir teach "My sister Ana lives in Lisbon and is a nurse" --type FACT:family --importance 7 >/dev/null
at 2026-10-03T20:15:00Z
$memdir teach "I'm learning to play the piano; I practise scales every evening" --type FACT:hobby >/dev/null
$memdir teach "Our team uses PostgreSQL and deploys on Kubernetes" --type FACT:work >/dev/null
at 2026-10-08T18:40:00Z
$memdir teach "I was really stressed this week: the Q4 migration deadline slipped again" --store episodic --temporal ephemeral >/dev/null
$memdir teach "Never schedule meetings before 10am, I do deep work in the mornings" --type RULE:schedule --importance 9 --pin >/dev/null
at 2026-10-12T11:00:00Z
$memdir teach "We adopted a rescue dog called Biscuit" --type EVENT:milestone --temporal milestone --store episodic --importance 8 >/dev/null
rejected=$($memdir infer "Sam dislikes dogs")
$memdir reject "$rejected" --reason "we just adopted one" >/dev/null
at 2026-10-20T08:30:00Z
$memdir teach "I switched to oat milk flat whites" --type FACT:preference --key coffee >/dev/null
confirmed=$($memdir infer "Sam prefers written summaries over long calls" --type FACT:preference)
at 2026-10-21T09:00:00Z
$memdir confirm "$confirmed" --evidence "yes, send me a summary instead of a call" >/dev/null
at 2026-10-25T19:00:00Z
$memdir teach "Ana is visiting from Lisbon over Christmas" --store episodic >/dev/null
$memdir teach "To restart the ingest worker: drain the queue, then kubectl rollout restart deploy/ingest" --store procedural --type HOWTO --importance 7 >/dev/null
$memdir infer "Sam may be burning out because of the migration" --ttl 7d >/dev/null
at 2026-11-20T10:00:00Z
$memdir infer "Sam wants a quieter week before the holidays" --ttl 14d >/dev/null
$memdir teach "The migration finally shipped; I feel relieved and proud of the team" --store episodic >/dev/null
$memdir expire >/dev/null 2>&1
echo "built examples/memdir: $($memdir stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["memories"])') memories"
