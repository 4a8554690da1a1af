"""Every environment variable memdir reads, with what it does: the one list docs/CLI.md's table
is generated from (cli/reference.py). tests/test_reference.py fails on a `MEMDIR_*` variable
that the code reads and this list leaves out."""

from __future__ import annotations

# name → meaning, in the order the docs list them
VARIABLES: dict[str, str] = {
    "MEMDIR": "the memdir to use when `--dir` is not given (else the nearest one upward)",
    "MEMDIR_NOW": "pretend it is this ISO date-time, as `--now` does, for every clock-dependent "
    "command",
    "MEMDIR_ACTOR": 'who runs the command line: `user` or `assistant` (docs/MCP.md, "An actor '
    'for every command-line write")',
    "CLAUDECODE, CODEX_SANDBOX, CODEX_SANDBOX_NETWORK_DISABLED, CODEX_THREAD_ID": "set by Claude "
    "Code and Codex CLI in the shells they give the model: the actor is then the assistant",
    "MEMDIR_LOCK_TIMEOUT": "seconds a write waits for the writer lock (default 10)",
    "MEMDIR_INDEX_TIMEOUT": "seconds an index update waits for the index lock (default 120)",
    "MEMDIR_SERVICE_TIMEOUT": "seconds the client waits for `memdir serve` before running the "
    "command itself (default 3)",
    "MEMDIR_NO_SERVICE": "set (non-empty): never ask a running `memdir serve`",
    "MEMDIR_GIT_TIMEOUT": "seconds each git operation of `memdir sync` may take before it is "
    "ended (default 120)",
    "MEMDIR_SYNCING": "set by `memdir sync` for its own git merge: the post-merge hook and "
    "`sync --local` then do nothing (that sync does it); not for people to set",
    "MEMDIR_PASSPHRASE": "the passphrase of `export --encrypt` and `restore` (else a prompt)",
    "MEMDIR_EMBED_MODEL": "directory of the all-MiniLM-L6-v2 files (after `embedder.path`)",
    "MEMDIR_EMBED_BF16": "`0`: embed every text with the exact float32 layers, even where the "
    "`bf16` extra would run an index build's in bfloat16 (docs/RECALL.md)",
    "MEMDIR_EMBED_URL": "`embedder.kind: http`: the OpenAI-compatible embeddings endpoint",
    "MEMDIR_EMBED_HTTP_MODEL": "`embedder.kind: http`: the model name sent to it",
    "MEMDIR_EMBED_KEY": "`embedder.kind: http`: the bearer key sent to it",
    "MEMDIR_EMBED_DIM": "`embedder.kind: http`: the vector width (else learnt from one probe)",
    "HF_HOME": "the Hugging Face cache searched for the MiniLM weights",
    "PGPASSWORD, PGHOST, PGDATABASE, …": "libpq's own variables, for `settings.index.backend: "
    "postgres` (the password never goes in memdir.yaml)",
    "COLUMNS": "the width tables are laid out for (on a pipe, none unless set)",
}
