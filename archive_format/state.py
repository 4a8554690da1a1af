"""Small mutable YAML files (state/*.yaml, memdir.yaml), always replaced atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from .errors import FormatError

# libyaml's C loader and dumper when PyYAML was built with them: several times faster.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# libyaml's safe loader and dumper when PyYAML has them: the same YAML, ~10x faster (the ring
# is read and rewritten on every teach).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def write_yaml(path: Path, data: Any) -> None:
    """Write YAML by temp file + fsync + rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = yaml.dump(
        data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def read_yaml(path: Path, default: Any = None) -> Any:
    """A state file's content, `default` when absent; invalid YAML is a FormatError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not UTF-8", hint="state files are UTF-8 YAML") from None
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        raise FormatError(f"{path}: invalid YAML", hint="fix it or delete the state file") from None
    return default if data is None else data
