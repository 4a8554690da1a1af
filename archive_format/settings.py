"""The `settings:` of memdir.yaml as one typed, validated, frozen object.

Each area (recall, decay, dream, journal, wake, vectors, embedder, affect, mcp, watch) is a
frozen dataclass; `Settings` holds them all. Every setting is declared once, with its default as
written in memdir.yaml, what it means and how its value is checked: the dataclass default,
`memdir init`'s memdir.yaml, the table in docs/FORMAT.md (`settings_table`, kept in sync by a
test) and the error for a wrong value all come from that one declaration.

`load_settings` is called when a memdir is opened — at the entry points (the CLI root, the MCP
server, the watch daemon) — and nothing else reads the raw mapping. A wrong type or value is a
FormatError naming the key and the file; an unknown key is a warning naming the closest known key.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta, timezone, tzinfo
from typing import Any

from .clock import parse_duration
from .errors import BadInputError, FormatError


class _Invalid(Exception):
    """A value a converter refuses: `expected` says what it wants."""

    def __init__(self, expected: str, secret: bool = False) -> None:
        super().__init__(expected)
        self.expected = expected
        self.secret = secret  # the value may hold a password: never repeat it


Converter = Callable[[Any], Any]


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise _Invalid("a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise _Invalid("a number") from None
    if not math.isfinite(number):
        raise _Invalid("a finite number")
    return number


def number(minimum: float | None = None, maximum: float | None = None) -> Converter:
    """A real number, optionally within [minimum, maximum]."""
    wanted = "a number" + (
        f" from {minimum:g} to {maximum:g}"
        if minimum is not None and maximum is not None
        else f" ≥ {minimum:g}"
        if minimum is not None
        else ""
    )

    def convert(value: Any) -> float:
        try:
            result = _number(value)
        except _Invalid as error:
            raise _Invalid(wanted if error.expected == "a number" else error.expected) from None
        if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
            raise _Invalid(wanted)
        return result

    return convert


def whole(minimum: int = 0, maximum: int | None = None) -> Converter:
    """A whole number ≥ minimum (and ≤ maximum, when given)."""
    wanted = (
        f"a whole number ≥ {minimum}"
        if maximum is None
        else f"a whole number from {minimum} to {maximum}"
    )

    def convert(value: Any) -> int:
        try:
            result = _number(value)
        except _Invalid:
            raise _Invalid(wanted) from None
        if result != int(result) or result < minimum or (maximum is not None and result > maximum):
            raise _Invalid(wanted)
        return int(result)

    return convert


def flag(value: Any) -> bool:
    """true or false."""
    if not isinstance(value, bool):
        raise _Invalid("true or false")
    return value


def text(*choices: str) -> Converter:
    """A string; one of `choices` when given."""
    wanted = f"one of {', '.join(choices)}" if choices else "a string"

    def convert(value: Any) -> str:
        if not isinstance(value, str) or not value or (choices and value not in choices):
            raise _Invalid(wanted)
        return value

    return convert


def optional_text(value: Any) -> str | None:
    """A string, or null for none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid("a string or null")
    return value


def duration(value: Any) -> timedelta:
    """A duration such as 90s, 30m, 12h, 7d, 2w."""
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except (BadInputError, OverflowError):
            pass
    raise _Invalid("a duration such as 90s, 30m, 12h, 7d or 2w")


def positive_duration(value: Any) -> timedelta:
    """A duration longer than zero."""
    result = duration(value)
    if result.total_seconds() <= 0:
        raise _Invalid("a duration longer than zero, such as 7d")
    return result


def duration_or_days(value: Any) -> timedelta:
    """A duration, or a bare number of days."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return timedelta(days=_number(value))
        except (_Invalid, OverflowError):
            pass
    try:
        return duration(value)
    except _Invalid:
        raise _Invalid("a duration such as 7d or 30d, or a number of days") from None


def zone(value: Any) -> str:
    """An IANA time zone name (Europe/Lisbon) or UTC."""
    if not isinstance(value, str) or not value:
        raise _Invalid("a time zone name such as UTC or Europe/Lisbon")
    if value.upper() != "UTC":
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except (KeyError, ValueError, OSError):
            raise _Invalid("a time zone name such as UTC or Europe/Lisbon") from None
    return value


def mapping_of(convert: Converter, keys: tuple[str, ...] = ()) -> Converter:
    """A mapping from names (one of `keys` when given) to values `convert` accepts."""

    def convert_mapping(value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise _Invalid("a mapping")
        result = {}
        for name, item in value.items():
            if not isinstance(name, str) or (keys and name not in keys):
                raise _Invalid(
                    f"a mapping with keys from {', '.join(keys)}" if keys else "a mapping"
                )
            try:
                result[name] = convert(item)
            except _Invalid as error:
                raise _Invalid(f"a mapping of names to {error.expected}") from None
        return result

    return convert_mapping


def setting(default: Any, meaning: str, convert: Converter) -> Any:
    """Declare one setting: its default as memdir.yaml writes it, what it means, its check."""
    value = convert(default)
    metadata = {"yaml": default, "meaning": meaning, "convert": convert}
    if isinstance(value, dict):
        return field(default_factory=lambda: copy.deepcopy(value), metadata=metadata)
    return field(default=value, metadata=metadata)


def section(cls: type, meaning: str) -> Any:
    """Declare a group of settings (a nested mapping in memdir.yaml)."""
    return field(default_factory=cls, metadata={"meaning": meaning, "section": cls})


# -- the areas ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbedderSettings:
    kind: str = setting(
        "auto", "`auto` (the larger model where `mpnet` names it, else e5 where `e5` names it,"
        " else MiniLM if found, else hashing), `minilm`, `hashing` or `http`",
        text("auto", "minilm", "hashing", "http"),
    )  # fmt: skip
    path: str | None = setting(
        None, "directory of the MiniLM files (else $MEMDIR_EMBED_MODEL, the HF cache, the package)",
        optional_text,
    )  # fmt: skip
    mpnet: str | None = setting(
        None, "directory of the unpacked all-mpnet-base-v2: with `kind: auto`, memdir embeds with"
        " this larger model instead (the quality setup, docs/RECALL.md)",
        optional_text,
    )  # fmt: skip
    e5: str | None = setting(
        None, "directory of multilingual-e5-small as `make e5-model` unpacks it: with `kind:"
        " auto`, memdir embeds with it instead (the e5 setup, docs/RECALL.md)",
        optional_text,
    )  # fmt: skip


@dataclass(frozen=True)
class AffectSettings:
    annotator: str = setting(
        "vader", "affect annotator: `vader` (VADER, MIT), `vader+nrc` (adds the NRC Emotion "
        "Lexicon's chord: the `nrc` extra, research use only) or `none` (docs/AFFECT.md)",
        text("vader+nrc", "vader", "none"),
    )  # fmt: skip


@dataclass(frozen=True)
class VerdictSettings:
    grounded_cosine: float = setting(
        0.45, "best cosine at or above which recall is GROUNDED", number(-1, 1)
    )
    weak_cosine: float = setting(
        0.25, "best cosine at or above which recall is LOW_CONFIDENCE", number(-1, 1)
    )
    grounded_bm25: float = setting(4.0, "best BM25 at or above which recall is GROUNDED", number(0))


@dataclass(frozen=True)
class RecallSettings:
    profile: str = setting(
        "default",
        "weight profile: `default`, `quality` (for `embedder.mpnet` or `embedder.e5`), `fitted` (learned on"
        " chats), `cama`, `anima` or one of `profiles`",
        text(),
    )
    profiles: dict[str, dict[str, float]] = setting(
        {}, "custom or changed profiles: `{NAME: {component: weight}}` (docs/RECALL.md)",
        mapping_of(mapping_of(number())),
    )  # fmt: skip
    cutoffs: dict[str, timedelta] = setting(
        {"emotion": "48h", "date": "168h", "financial": "168h", "ephemeral": "24h"},
        "hard age cut-off per memory type, subtype or temporal class: older memories of it are"
        " neither recalled nor shown in wake and boot",
        mapping_of(duration),
    )
    half_lives_days: dict[str, float] = setting(
        {"fact": 3650.0, "rule": 3650.0, "howto": 3650.0, "emotion": 2.0},
        "recency half-life in days per memory type (else the profile's `half_life_days`)",
        mapping_of(number(0)),
    )
    distilled_cutoffs: bool = setting(
        False,
        "apply the age cut-offs and the per-type half-lives to the types distillation derived"
        " too (off: they measured a loss on LoCoMo, whose questions come long after the turns)",
        flag,
    )
    interference: float = setting(
        0.0,
        "human recall's interference: memories alike each other (cosine ≥ 0.6) compete,"
        " each score × (1 + X · cosine · a seeded draw in [−1, 1]); 0 is off, `--perfect` never"
        " has it (docs/RECALL.md)",
        number(0, 1),
    )
    activation: bool = setting(
        True, "spreading activation: memories linked to the best results join them (off: links"
        " count only as `deg`; docs/RECALL.md)", flag,
    )  # fmt: skip
    exact_below: int = setting(
        20000, "up to this many memories recall scores every one (exact scope), else a pool",
        whole(0),
    )  # fmt: skip
    verdict: VerdictSettings = section(VerdictSettings, "thresholds of the grounding verdict")


@dataclass(frozen=True)
class JournalSettings:
    raw_window_turns: int = setting(
        6, "the raw window holds the last N trusted user turns (any session)…", whole(0)
    )
    raw_window_hours: float = setting(48, "…of the last H hours", number(0))


@dataclass(frozen=True)
class DecaySettings:
    exponent: float = setting(
        0.5, "fidelity F = (1 + t/S)^-exponent (docs/CONTINUITY.md)", number(0)
    )
    stability: dict[str, timedelta] = setting(
        {"episodic": "7d", "semantic": "30d", "procedural": "30d"},
        "base stability S per store",
        mapping_of(duration_or_days),
    )
    growth: float = setting(2.0, "S grows by this factor per spaced rehearsal", number(0))
    spacing: timedelta = setting("1h", "rehearsals closer than this count once", duration)
    emotion: float = setting(1.0, "S × (1 + emotion × emotional intensity)", number(0))
    strength: float = setting(0.1, "recall score × (1 - strength × (1 - F))", number(0, 1))
    reactivation: dict[str, float] = setting(
        {"elaborates": 0.5, "resonates": 0.3, "supports": 0.3, "summarises": 0.25,
         "derived-from": 0.25},
        "reactivation: a rehearsal refreshes each memory linked to it by this fraction of a"
        " rehearsal, per link type (other types: none; 0 switches a type off)",
        mapping_of(number(0, 1)),
    )  # fmt: skip

    @property
    def spacing_seconds(self) -> float:
        return self.spacing.total_seconds()

    @property
    def stability_days(self) -> dict[str, float]:
        return {store: value.total_seconds() / 86400 for store, value in self.stability.items()}

    def base_stability(self, store: str) -> float:
        """S in days for a store (an unknown store decays like an episodic memory)."""
        table = self.stability_days
        return float(table.get(store, table.get("episodic", 7.0)))


@dataclass(frozen=True)
class DreamSettings:
    summariser: str | None = setting(
        None, "command that summarises a transcript on stdin (else extractive summaries)",
        optional_text,
    )  # fmt: skip
    timeout: timedelta = setting("60s", "how long the summariser may take", duration)
    gap: timedelta = setting("45m", "a silence this long in a session starts a new group", duration)
    quick_gap: timedelta = setting(
        "10m", "a shorter silence starts a new group when the words change", duration
    )
    min_overlap: float = setting(
        0.08, "word overlap below which a quick gap splits a group", number(0, 1)
    )


@dataclass(frozen=True)
class DistillSettings:
    command: str | None = setting(
        None, "command that distils memories instead of the built-in distiller: JSON lines"
        " `{\"text\"}` on stdin, one `{\"type\", \"subtype\", \"importance\", \"temporal\"}` line"
        " each on stdout (docs/RECALL.md)", optional_text,
    )  # fmt: skip
    timeout: timedelta = setting(
        "60s", "how long the distiller command may take per batch", duration
    )
    milestones: bool = setting(
        False, "distilled milestones join recall's guaranteed channel like `--temporal"
        " milestone` (off: they cost LoCoMo dev R@10 0.027 and REALTALK dev 0.034)", flag,
    )  # fmt: skip


@dataclass(frozen=True)
class ContextSettings:
    hard_facts: str = setting(
        "relevant", "hard facts in the per-prompt block: `relevant` (those the prompt names or"
        " bears on) or `always` (every current keyed memory in every prompt, as ANIMA does)",
        text("relevant", "always"),
    )  # fmt: skip
    journal: bool = setting(
        True, "when no memory answers a prompt, the per-prompt block carries the journal turns"
        " that hold its words (normal turns of other conversations; docs/MCP.md)", flag,
    )  # fmt: skip


@dataclass(frozen=True)
class WakeSettings:
    budget: int = setting(1500, "token budget of the wake document", whole(1))


@dataclass(frozen=True)
class VectorSettings:
    hnsw_above: int = setting(
        50000, "more vectors than this: an HNSW base index, else exact (flat)", whole(0)
    )
    hnsw_m: int = setting(20, "HNSW graph degree M", whole(2))
    ef_construction: int = setting(80, "HNSW efConstruction", whole(1))
    ef_search: int = setting(192, "HNSW efSearch", whole(1))


def dsn(value: Any) -> str | None:
    """A libpq connection string without a password, or null for libpq's defaults ($PGHOST…)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid("a connection string such as postgresql://memdir@db.example/memdir, or null")
    if _names_a_password(value):
        raise _Invalid(
            "a connection string without a password (put it in $PGPASSWORD or ~/.pgpass)",
            secret=True,
        )
    return value


def _names_a_password(dsn: str) -> bool:
    from urllib.parse import parse_qs, urlsplit

    if "://" in dsn:
        try:
            parts = urlsplit(dsn)
            return parts.password is not None or "password" in parse_qs(parts.query)
        except ValueError:
            return True  # unparseable: refuse rather than risk storing a secret
    return re.search(r"(^|\s)password\s*=", dsn) is not None


# PostgreSQL's ceiling for maintenance_work_mem (2^31 − 1 kB), in MB
MAX_MAINTENANCE_MB = (2**31 - 1) // 1024


@dataclass(frozen=True)
class IndexSettings:
    backend: str = setting(
        "local", "where the derived index lives: `local` (files under .memdir/) or `postgres`",
        text("local", "postgres"),
    )  # fmt: skip
    dsn: str | None = setting(
        None, "`postgres`: the libpq connection string, never with a password (that comes "
        "from $PGPASSWORD or ~/.pgpass); null: libpq's $PGHOST, $PGDATABASE, …", dsn,
    )  # fmt: skip
    build_megabytes: int = setting(
        1024, "`postgres`: the most memory an HNSW build asks of the server (MB, "
        "`maintenance_work_mem` for its own transaction); it asks what the graph needs, at least "
        "256 MB, up to this. A larger graph is built partly on disk, far more slowly: 1024 held "
        "about 510,000 vectors of 384 floats, a million asked for 2,652 (docs/SCALE.md)",
        whole(1, MAX_MAINTENANCE_MB),
    )  # fmt: skip


@dataclass(frozen=True)
class McpSettings:
    quote_window: timedelta = setting(
        "24h", "how recent a user turn must be for MCP `teach` and `forget` to quote it", duration
    )


@dataclass(frozen=True)
class WatchSettings:
    debounce: float = setting(
        0.2, "seconds of quiet after a change before `watch` indexes", number(0)
    )
    max_delay: float = setting(
        1.0, "during a burst, `watch` indexes at least this often (s)", number(0)
    )
    poll: float = setting(
        10.0, "`watch` checks the checkpoints this often anyway (s)", number(0.01)
    )
    retry: float = setting(
        2.0, "after a failed update, `watch` tries again this soon (s)", number(0.01)
    )


@dataclass(frozen=True)
class AttachmentSettings:
    max_bytes: int = setting(
        20971520, "largest file `teach --attach` and `attach` store (bytes; 20 MiB)", whole(1)
    )


@dataclass(frozen=True)
class Settings:
    """Everything memdir.yaml's `settings:` can say, with the defaults filled in."""

    timezone: str = setting("UTC", "the user's time zone for documents and time expressions", zone)
    inference_ttl: timedelta = setting(
        "7d", "how long an inference stays provisional unconfirmed (`90s`, `30m`, `12h`, `7d`, `2w`)",
        positive_duration,
    )  # fmt: skip
    provisional_weight: float = setting(
        0.4, "recall weight of a provisional inference (a durable memory weighs 1)", number(0, 1)
    )
    embedder: EmbedderSettings = section(EmbedderSettings, "embedding model")
    affect: AffectSettings = section(AffectSettings, "affect annotation")
    recall: RecallSettings = section(RecallSettings, "recall (docs/RECALL.md)")
    journal: JournalSettings = section(JournalSettings, "journal")
    decay: DecaySettings = section(DecaySettings, "decay (docs/CONTINUITY.md)")
    dream: DreamSettings = section(DreamSettings, "dream: grouping and summaries")
    distill: DistillSettings = section(DistillSettings, "distillation (docs/RECALL.md)")
    context: ContextSettings = section(ContextSettings, "the per-prompt block (`memdir context`)")
    wake: WakeSettings = section(WakeSettings, "the wake document")
    vectors: VectorSettings = section(VectorSettings, "the vector index (FAISS or pgvector)")
    index: IndexSettings = section(IndexSettings, "where the derived index lives (docs/SCALE.md)")
    mcp: McpSettings = section(McpSettings, "`memdir mcp`")
    watch: WatchSettings = section(WatchSettings, "`memdir watch`")
    attachments: AttachmentSettings = section(
        AttachmentSettings, "attached files (docs/FORMAT.md, section 10)"
    )

    @property
    def zone(self) -> tzinfo:
        """The user's time zone, for documents, dream and time windows."""
        if self.timezone.upper() == "UTC":
            return timezone.utc
        from zoneinfo import ZoneInfo

        return ZoneInfo(self.timezone)


# -- loading ------------------------------------------------------------------------------------


# Settings that run a program or say where this machine's data goes: a clone must not choose
# them (a remote's memdir.yaml arrives by `sync`), so they are read from the per-machine file
# only (LOCAL_NAME, git-ignored) and ignored, with a warning, in memdir.yaml (docs/FORMAT.md).
LOCAL_ONLY = (
    "dream.summariser", "distill.command", "index.backend", "index.dsn", "index.build_megabytes"
)  # fmt: skip
LOCAL_NAME = "memdir.local.yaml"


def load_settings(
    given: Any, source: str, local: Any = None, local_source: str = LOCAL_NAME
) -> tuple[Settings, list[str]]:
    """memdir.yaml's `settings:` over the defaults, the per-machine file's (`local`, its own
    `settings:`) LOCAL_ONLY keys over those, and a warning per unknown or misplaced key.

    `source` names the file in messages. Raises FormatError for a wrong type or value (a
    LOCAL_ONLY value is checked in either file, so a password in a DSN is refused anywhere).
    """
    warnings: list[str] = []
    shared = {} if given is None else given
    _load(Settings, shared, "settings", source, [])  # every value checked, wherever it sits
    if isinstance(shared, Mapping):
        shared, misplaced = split_local(shared)
        warnings += [f"{source}: {key} is ignored here: a per-machine setting (a clone could "
                     f"have put it there) belongs in {LOCAL_NAME}; `memdir init` moves it"
                     for key in misplaced]  # fmt: skip
    if local is not None:
        if not isinstance(local, Mapping):
            raise FormatError(f"{local_source}: settings must be a mapping, not {local!r}",
                              hint="e.g. settings: {dream: {summariser: my-summariser}}")  # fmt: skip
        _load(Settings, local, "settings", local_source, [])  # a wrong value names its file
        kept, wanted = split_local(local)
        for key in _dotted(kept):
            warnings.append(f"{local_source}: {key} is ignored here: only "
                            f"{', '.join(LOCAL_ONLY)} are per-machine settings")  # fmt: skip
        shared = _overlay(shared, {key: value for key, value in wanted.items()})
    settings = _load(Settings, shared, "settings", source, warnings)
    return settings, warnings


def misplaced_local(config: Mapping[str, Any]) -> list[str]:
    """The per-machine (LOCAL_ONLY) keys a memdir.yaml mapping sets, which do nothing there."""
    shared = config.get("settings")
    return sorted(split_local(shared)[1]) if isinstance(shared, Mapping) else []


def split_local(given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the mapping without its LOCAL_ONLY keys, {dotted key: value} of those set, not null)."""
    rest = {key: (dict(value) if isinstance(value, Mapping) else value)
            for key, value in given.items()}  # fmt: skip
    taken: dict[str, Any] = {}
    for dotted in LOCAL_ONLY:
        section, name = dotted.split(".")
        inner = rest.get(section)
        if isinstance(inner, dict) and name in inner:
            value = inner.pop(name)
            if value is not None:
                taken[dotted] = value
    return rest, taken


def _dotted(given: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in given.items():
        if isinstance(value, Mapping) and value:
            found += _dotted(value, f"{prefix}{key}.")
        elif not isinstance(value, Mapping) and value is not None:
            found.append(f"{prefix}{key}")
    return found


def _overlay(given: Mapping[str, Any], dotted: Mapping[str, Any]) -> dict[str, Any]:
    merged = {key: (dict(value) if isinstance(value, Mapping) else value)
              for key, value in given.items()}  # fmt: skip
    for key, value in dotted.items():
        section, name = key.split(".")
        inner = merged.get(section)
        merged[section] = {**(inner if isinstance(inner, dict) else {}), name: value}
    return merged


def _load(cls: type, given: Any, where: str, source: str, warnings: list[str]) -> Any:
    if not isinstance(given, Mapping):
        raise FormatError(
            f"{source}: {where} must be a mapping, not {given!r}",
            hint="see the settings table in docs/FORMAT.md",
        )
    known = {item.name: item for item in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in given.items():
        name = str(key)
        item = known.get(name)
        if item is None:
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
            warnings.append(
                f"{source}: unknown setting {where}.{name} is ignored"
                + (f" (did you mean {where}.{close[0]}?)" if close else "")
            )
            continue
        nested = item.metadata.get("section")
        if value is None and (nested is not None or item.metadata["yaml"] is not None):
            continue  # `key:` left empty (YAML null) takes the default
        if nested is not None:
            values[name] = _load(nested, value, f"{where}.{name}", source, warnings)
            continue
        try:
            values[name] = item.metadata["convert"](value)
            if isinstance(values[name], dict):  # a mapping is merged over its default mapping
                values[name] = {**item.metadata["convert"](item.metadata["yaml"]), **values[name]}
        except _Invalid as error:
            raise FormatError(
                f"{source}: {where}.{name} must be {error.expected}"
                + ("" if error.secret else f", not {value!r}"),
                hint=f"fix it in {source} or remove it for the default "
                f"({_yaml(item.metadata['yaml'])}); see docs/FORMAT.md",
            ) from None
    return cls(**values)


# -- the documented defaults --------------------------------------------------------------------


def _leaves(cls: type, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for item in fields(cls):
        nested = item.metadata.get("section")
        if nested is not None:
            yield from _leaves(nested, f"{prefix}{item.name}.")
        else:
            yield f"{prefix}{item.name}", item


# What `memdir init` writes into a new memdir.yaml, to show the settings most often changed;
# a setting left out takes its default.
INIT_KEYS = (
    "timezone", "inference_ttl", "provisional_weight", "embedder", "affect", "recall.profile",
    "journal", "decay", "dream", "wake",
)  # fmt: skip


def default_yaml(cls: type = Settings, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The defaults as memdir.yaml writes them; only `keys` (dotted: `recall.profile`) if given."""
    result: dict[str, Any] = {}
    for item in fields(cls):
        wanted = keys is None or item.name in keys
        below = tuple(k.split(".", 1)[1] for k in keys or () if k.startswith(f"{item.name}."))
        if not wanted and not below:
            continue
        nested = item.metadata.get("section")
        if nested is not None:
            result[item.name] = default_yaml(nested, None if wanted else below)
        else:
            result[item.name] = copy.deepcopy(item.metadata["yaml"])
    return result


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}" if value else "{}"
        )
    return f"{value:g}" if isinstance(value, float) else str(value)


def settings_table() -> str:
    """The Markdown table of every setting, its default and meaning (docs/FORMAT.md holds it)."""
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    for key, item in _leaves(Settings):
        rows.append(f"| `{key}` | `{_yaml(item.metadata['yaml'])}` | {item.metadata['meaning']} |")
    return "\n".join(rows) + "\n"


def setting_keys() -> list[str]:
    """Every leaf setting as a dotted key (decay.strength, …)."""
    return [key for key, _ in _leaves(Settings)]
