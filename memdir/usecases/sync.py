"""`memdir sync`: commit what memdir wrote, merge the other clones' lines, push.

1. refuse when git has unresolved conflicts (they are not memdir's: its files union-merge);
2. add memdir's lines to .gitattributes/.gitignore, stop tracking the per-machine files;
3. commit the memdir's directory with a generated message (only its paths);
4. `git pull --no-rebase` from the remote (the union driver merges the shelves);
5. re-apply tombstones (a merge may bring a forgotten memory's line back), drop duplicate lines,
   and commit that;
6. update the index, then push when there is a remote.

What a merge may not do — delete lines, make a shelf binary, hang — is refused or repaired in
sync_safety.py; every git command here runs with its timeout.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.archive_format import gitrules, secrets, tombstones
from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import BadInputError, MemdirError
from memdir.archive_format.history import git, in_git
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.tombstones import writing
from memdir.words import counted

from . import githooks
from .sync_safety import (
    SYNCING_ENV,
    escape_local_nul,
    git_timed,
    kept_ids,
    lost_lines,
    merge_text_conflicts,
    refuse_deletions,
)


@dataclass
class SyncReport:
    """What a sync did (or, with `dry_run`, would do)."""

    dry_run: bool
    remote: str | None = None
    branch: str | None = None
    to_commit: list[str] = field(default_factory=list)  # paths, relative to the memdir
    commits: list[str] = field(default_factory=list)  # the commits made, as short hashes
    merged: int = 0  # commits that came in with the pull
    compacted: list[str] = field(default_factory=list)  # forgotten memories whose text went again
    deduplicated: int = 0
    pushed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "remote": self.remote,
            "branch": self.branch,
            "to_commit": self.to_commit,
            "commits": self.commits,
            "merged": self.merged,
            "compacted": self.compacted,
            "deduplicated": self.deduplicated,
            "pushed": self.pushed,
        }


def _run(root: Path, *args: str) -> str:
    done = git_timed(root, *args)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise MemdirError(
            f"git {args[0]} failed: {lines[-1] if lines else f'exit {done.returncode}'}",
            hint="run the same git command by hand to see everything",
        )
    return done.stdout


def _conflicted(root: Path) -> list[str]:
    return git(root, "diff", "--name-only", "--diff-filter=U").stdout.split()


def _remote(root: Path, given: str | None) -> tuple[str | None, str | None]:
    """The remote and branch to pull from: given, else the branch's upstream, else `origin`."""
    branch = git(root, "symbolic-ref", "--short", "-q", "HEAD").stdout.strip() or None
    remotes = git(root, "remote").stdout.split()
    if given is not None:
        if given not in remotes:
            raise BadInputError(
                f"no git remote named {given!r}",
                hint=f"remotes here: {', '.join(remotes) or 'none'}",
            )
        return given, branch
    upstream = git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
    if upstream.returncode == 0 and "/" in upstream.stdout:
        remote, _, merge_branch = upstream.stdout.strip().partition("/")
        return remote, merge_branch
    if "origin" in remotes:
        return "origin", branch
    return (remotes[0], branch) if len(remotes) == 1 else (None, branch)


def _pending(root: Path) -> list[str]:
    status = git(root, "status", "--porcelain", "--untracked-files=all", "--", ".").stdout
    return sorted(line[3:] for line in status.splitlines() if line.strip())


def _commit(root: Path, message: str) -> str | None:
    """Commit every change under the memdir (only there); the short hash, or None."""
    _run(root, "add", "-A", "--", ".")
    if git(root, "diff", "--cached", "--quiet", "--", ".").returncode == 0:
        return None
    # `commit -- .` would take the working tree's files, undoing `rm --cached`; so the paths are
    # named only when something outside the memdir is staged too (it stays staged, uncommitted)
    outside = git(root, "diff", "--cached", "--quiet", "--", ":(top)", ":(exclude).").returncode
    only = ["--", "."] if outside else []
    _run(root, "commit", "--quiet", "--no-verify", "-m", message, *only)
    return _run(root, "rev-parse", "--short", "HEAD").strip()


def _message(root: Path, now: datetime) -> str:
    counts: dict[str, int] = {}
    for line in git(root, "diff", "--cached", "--numstat", "--", ".").stdout.splitlines():
        added, _, path = line.split("\t", 2)
        top = path.split("/")[0] if "/" in path else path
        counts[top] = counts.get(top, 0) + (int(added) if added.isdigit() else 0)
    what = ", ".join(f"{name} +{count}" for name, count in sorted(counts.items())) or "no lines"
    return f"memdir sync from {socket.gethostname()} at {format_time(now)}: {what}"


def sync(
    memdir: Memdir,
    now: datetime,
    remote: str | None = None,
    push: bool = True,
    dry_run: bool = False,
    reindex: bool = True,
    local: bool = False,
) -> SyncReport:
    """One sync of the memdir with its git remote (docs/FORMAT.md, "Sync"); `local` skips the
    pull and the push (e.g. in a post-merge hook, after git merged)."""
    root = memdir.root
    if not in_git(root):
        raise BadInputError(
            f"{root} is not in a git repository", hint="`git init` there first, then `memdir sync`"
        )
    conflicts = _conflicted(root)
    if conflicts:
        raise MemdirError(
            f"git has unresolved conflicts: {', '.join(conflicts)}",
            hint="resolve them (or `git merge --abort`), then run `memdir sync` again",
        )
    report = SyncReport(dry_run)
    if not local:
        report.remote, report.branch = _remote(root, remote)
    report.to_commit = _pending(root)
    if dry_run:
        return report
    with writing(memdir):  # taking it re-applies tombstones
        gitrules.merge(root)
        escape_local_nul(memdir)  # git must keep seeing text (sync_safety.py)
        githooks.install(root)  # a later plain `git pull` re-applies forgets too
        secrets.move_out(memdir)  # an older memdir's secret turns, sealed memories: git-ignored
        tracked = git(root, "ls-files", "--", *gitrules.UNTRACKED).stdout.split()
        if tracked:
            _run(root, "rm", "--cached", "--quiet", "--", *tracked)
        _add_commit(report, root, _message_staged(root, now))
        if report.remote is not None:
            _pull(report, memdir)
        # whole, not from the stamp's checksums: git may have changed a shelf anywhere (FORMAT.md,
        # "Forget after a merge"), and a sync pays for git's own pass over the shelves already
        report.compacted = tombstones.reapply(memdir, now, full=True)
        report.deduplicated = sum(tombstones.dedupe(memdir, path) for path in memdir.shelves())
        if report.compacted or report.deduplicated:
            _add_commit(report, root, _cleanup_message(report))
    if reindex:
        from memdir.usecases.recall import fresh_index

        index = fresh_index(memdir)
        try:  # clones holding the same lines then score them alike (docs/FORMAT.md "Sync")
            index.compact_fulltext()
        finally:
            index.close()
    if local:
        return report
    if report.remote is None:
        if not push:  # nothing to pull and no push wanted: committing was the whole job
            return report
        raise MemdirError(
            "no git remote to sync with; the memdir was committed locally"
            + (f" ({', '.join(report.commits)})" if report.commits else ""),
            hint="add one with `git remote add origin URL`, or pass --remote NAME; "
            "`memdir sync --no-push` commits without one",
        )
    if push:
        _refuse_secrets(root, report.remote)
        target = f"HEAD:{report.branch}" if report.branch else "HEAD"
        _run(root, "push", "--quiet", report.remote, target)  # (with the timeout)
        report.pushed = True
    return report


def _refuse_secrets(root: Path, remote: str) -> None:
    """Nothing is pushed while a commit that is not on the remote yet adds a secret turn or a
    sealed memory (made before secrets stayed on their machine, or by hand): it would leave in
    plain text."""
    leaked = secrets.unpushed(root, remote)
    if leaked:
        raise MemdirError(
            f"refusing to push: {counted(len(leaked), 'unpushed commit')} holding a secret "
            f"turn or sealed memory in plain text "
            f"({', '.join(leaked[:3])}{', …' if len(leaked) > 3 else ''})",
            hint="they now live in journal/secret.jsonl and shelves/sealed.jsonl (git-ignored); "
            f"drop them from "
            f"those commits, e.g. `git reset --soft {remote}/BRANCH` then `memdir sync`",
        )


def _message_staged(root: Path, now: datetime) -> str:
    _run(root, "add", "-A", "--", ".")
    return _message(root, now)


def _add_commit(report: SyncReport, root: Path, message: str) -> None:
    made = _commit(root, message)
    if made:
        report.commits.append(made)


def _cleanup_message(report: SyncReport) -> str:
    parts = []
    if report.compacted:
        parts.append(f"re-applied {counted(len(report.compacted), 'forget')} a merge had undone")
    if report.deduplicated:
        parts.append(f"dropped {counted(report.deduplicated, 'duplicate line')}")
    return "memdir sync: " + "; ".join(parts)


def _pull(report: SyncReport, memdir: Memdir) -> None:
    """Fetch and merge the remote (union-merged shelves); a merge that would delete shelf lines
    is undone and refused, NUL-byte shelves are merged as text (sync_safety.py)."""
    root = memdir.root
    before = _run(root, "rev-parse", "HEAD").strip() if _has_head(root) else None
    assert report.remote is not None
    fetched = git_timed(
        root, "fetch", "--quiet", report.remote, *([report.branch] if report.branch else [])
    )
    if fetched.returncode != 0:
        if "couldn't find remote ref" in fetched.stderr:
            return  # the remote branch does not exist yet: the push creates it
        lines = (fetched.stderr or fetched.stdout).strip().splitlines()
        raise MemdirError(
            f"git pull failed: {lines[-1] if lines else f'exit {fetched.returncode}'}",
            hint=f"run `{_pull_command(report)}` by hand to see everything",
        )
    held = kept_ids(memdir)
    done = git_timed(
        root, "merge", "--no-commit", "--no-edit", "--quiet", "FETCH_HEAD", env={SYNCING_ENV: "1"}
    )
    if done.returncode != 0:
        conflicts = merge_text_conflicts(root, _conflicted(root))
        if conflicts:
            git_timed(root, "merge", "--abort")
            raise MemdirError(
                f"the pull conflicts in {', '.join(conflicts)} (not lines memdir merges); "
                "the merge was aborted",
                hint=f"merge by hand: `{_pull_command(report)}`, resolve, commit, `memdir sync`",
            )
        if not _merging(root):
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise MemdirError(
                f"git pull failed: {lines[-1] if lines else f'exit {done.returncode}'}",
                hint=f"run `{_pull_command(report)}` by hand to see everything",
            )
    lost = lost_lines(held, kept_ids(memdir))
    if lost:
        if _merging(root):
            git_timed(root, "merge", "--abort")
        elif before is not None:  # a fast-forward: back to where this clone was
            _run(root, "reset", "--quiet", "--keep", before)
        refuse_deletions(lost, report.remote)
    if _merging(root):
        _run(root, "commit", "--quiet", "--no-verify", "--no-edit")
    if before is not None:
        count = _run(root, "rev-list", "--count", f"{before}..HEAD").strip()
        report.merged = int(count or 0)
        _keep_linked_attachments(memdir, before)


def _keep_linked_attachments(memdir: Memdir, before: str) -> None:
    """A clone that forgot the last memory linking a file deleted it; a memory another clone
    linked to the same bytes meanwhile still needs it: bring back (and commit) each attached
    file that this clone or the remote had before the merge, that is gone now and that an
    unforgotten memory links (docs/FORMAT.md section 10)."""
    from memdir.archive_format import attachments, lifecycle

    root = memdir.root
    gone: dict[str, str] = {}  # path → a commit that has it
    for rev in (before, "FETCH_HEAD"):
        listed = git(root, "ls-tree", "-r", "--name-only", rev, "--", attachments.FOLDER)
        for name in listed.stdout.split() if listed.returncode == 0 else []:
            if not (root / name).exists():
                gone.setdefault(name, rev)
    if not gone:
        return
    linked: set[str] = set()
    with writing(memdir):
        for state in lifecycle.load_view(memdir, lifecycle.EVERY_LINE):
            if state.status != "forgotten" and state.memory is not None:
                linked.update(attachments.linked(state.links))
        back = {name: rev for name, rev in gone.items()
                if attachments.attachment_id(Path(name).name.split(".")[0]) in linked}  # fmt: skip
        for rev in dict.fromkeys(back.values()):
            _run(root, "checkout", rev, "--", *(name for name in back if back[name] == rev))
        if back:
            _run(root, "commit", "--quiet", "--no-verify", "-m",
                 f"memdir sync: keep {counted(len(back), 'attached file')} a memory still links")  # fmt: skip


def _pull_command(report: SyncReport) -> str:
    """The pull sync made, as a user types it: it works as written whatever pull.rebase says
    and whether or not the branch has an upstream."""
    return " ".join(
        ["git pull --no-rebase", str(report.remote), *([report.branch] if report.branch else [])]
    )


def _merging(root: Path) -> bool:
    return git(root, "rev-parse", "-q", "--verify", "MERGE_HEAD").returncode == 0


def _has_head(root: Path) -> bool:
    return git(root, "rev-parse", "--verify", "-q", "HEAD").returncode == 0
