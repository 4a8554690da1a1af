"""Small mutable YAML files (state/*.yaml, memdir.yaml), always replaced atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .atomic import write_text
from .errors import FormatError

# libyaml's safe loader and dumper when PyYAML has them: the same YAML, ~10x faster (the ring
# is read and rewritten on every teach).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def write_yaml(path: Path, data: Any, sync_directory: bool = True) -> None:
    """Write YAML atomically (`atomic.write_text`), so a reader never sees half a file."""
    text = yaml.dump(
        data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    write_text(path, text, sync_directory=sync_directory)


def parse_yaml(text: str) -> Any:
    """YAML text as data, with the fast loader (a yaml.YAMLError when it is not YAML)."""
    return yaml.load(text, Loader=_LOADER)


def read_yaml(path: Path, default: Any = None) -> Any:
    """A state file's content, `default` when absent; invalid YAML is a FormatError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not UTF-8", hint="state files are UTF-8 YAML") from None
    try:
        data = parse_yaml(text)
    except yaml.YAMLError:
        raise FormatError(f"{path}: invalid YAML", hint="fix it or delete the state file") from None
    return default if data is None else data
