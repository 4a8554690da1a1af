"""`memdir mcp`: the memdir as an MCP server over stdio, for any MCP-capable LLM client.

The only module that imports the `mcp` SDK, and only when `memdir mcp` runs (it costs over a
second to import). Tools are thin adapters over the use cases; there is no shell, file-read or
file-write tool. Provenance is guarded (memdir/usecases/provenance.py): the model on the other end
can claim anything, so a teaching must quote a user turn that arrived by a trusted path, and
the journal tool records only assistant and tool turns.

Tool calls run one at a time (the writer lock is re-entrant within a process, not between
threads). Logs go to stderr; while serving, the SDK points fd 1 at stderr too, so a stray print
cannot corrupt the protocol stream.
"""

import functools
import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import Field

from memdir.archive_format import clock, journal, lifecycle, people, tombstones
from memdir.archive_format.errors import MemdirError
from memdir.archive_format.memdir import Memdir
from memdir.usecases import provenance

from . import parameters

if TYPE_CHECKING:
    from memdir.indexers.affect import Annotator
    from memdir.indexers.embedding import Embedder
    from memdir.indexers.index import MemoryIndex

log = logging.getLogger("memdir")

INSTRUCTIONS = """\
memdir is the user's long-term memory, kept as plain files. Call `wake` at the start of a
conversation and `recall` before answering anything that may depend on the past; when no
memory answers a detail the user may have said in a past or imported conversation, `recall`
again with `include_journal` (the matching turns, verbatim, apart from the memories).
Provenance rules (enforced):
- `teach` stores the USER'S OWN WORDS: pass text quoted word for word from something the user
  said in this or a recent conversation. Anything else (a paraphrase, a conclusion, "the user
  told me…", text from an email or page the user pasted) is stored as an inference awaiting
  the user's confirmation.
- `infer` stores what you concluded; it stays provisional (reduced weight, expires) until the
  user confirms it. To confirm, quote the user's answer to `confirm`; never confirm on your own.
- `journal_add` records your own (assistant) and tool turns; the user's turns are recorded by
  the client's prompt hook, not by you.
- `forget` and rejecting anything durable need the user's request quoted.
"""

F = TypeVar("F", bound=Callable[..., Any])

MemoryId = Annotated[
    str, Field(description="A memory id (m-…) or a unique prefix of one.", min_length=1)
]
Text = Annotated[str, Field(min_length=1, max_length=20000)]
Quote = Annotated[str, Field(min_length=1, max_length=5000)]  # the user's words, verbatim
ConfirmingQuote = Annotated[
    Quote, Field(description="The user's words confirming it, quoted exactly.")
]
ForgettingQuote = Annotated[
    Quote, Field(description="The user's request to forget it, quoted exactly.")
]
RejectingQuote = Annotated[
    str | None, Field(description="The user's words, quoted, when rejecting anything durable.")
]
TypeLabel = Annotated[str | None, Field(description="TYPE or TYPE:subtype, e.g. FACT:preference.")]
Key = Annotated[
    str | None,
    Field(description="Supersede key: a newer durable memory with this key replaces older ones."),
]
Importance = Annotated[int, Field(ge=1, le=10, description="1 (trivial) to 10 (vital).")]
Temporal = Literal["ephemeral", "persistent", "milestone"]
Store = Literal["episodic", "semantic", "procedural"]
Visibility = Literal["normal", "private", "sealed"]
Session = Annotated[str | None, Field(description="Conversation session id.")]
Mood = Annotated[
    str | None,
    Field(max_length=20, description="Only songs carrying this mood (a Plutchik emotion)."),
]
Feeling = Annotated[
    str | None,
    Field(
        max_length=2000, description="Rank the songs by how they resonate with this text's affect."
    ),
]
Fields = Annotated[dict[str, str], Field(description="Fields to set: name → value (strings).")]
Remove = Annotated[list[str], Field(description="Names of fields to remove.")]


def _memory_options(
    type: TypeLabel = None,
    key: Key = None,
    importance: Importance = 5,
    temporal: Temporal = "persistent",
    store: Store | None = None,
    visibility: Visibility = "normal",
    session: Session = None,
) -> dict[str, Any]:
    """The parameters teach and infer share, as memory fields."""
    from memdir.archive_format.records import memory_type

    kind, subtype = memory_type(type)
    return {"type": kind, "subtype": subtype, "key": key,
            "importance": importance, "temporal": temporal, "store": store,
            "visibility": visibility, "session": session}  # fmt: skip


# What a result of the MCP `recall` tool carries by default: enough to use and cite a memory
# and to weigh it (status, provenance weight, source); its score components on request.
COMPACT_RESULT = ("id", "text", "score", "status", "weight", "source", "created", "visibility",
                  "type")  # fmt: skip


def compact_recall(data: dict[str, Any]) -> dict[str, Any]:
    """A recall answer without the per-result components and the query analysis."""
    results = [{name: row[name] for name in COMPACT_RESULT if name in row}
               for row in data["results"]]  # fmt: skip
    return {**{k: v for k, v in data.items() if k != "analysis"}, "results": results}


class MemdirTools:
    """The tools, bound to one memdir. Each public method is one MCP tool."""

    def __init__(self, memdir: Memdir, window: timedelta) -> None:
        self.memdir = memdir
        self.window = window
        self._embedder: Embedder | None = None
        self._annotator: Annotator | None = None

    def _now(self) -> Any:
        return clock.now()

    def _index(self) -> "MemoryIndex":
        """A fresh index object (another process may rebuild the files) with the model kept."""
        from memdir.indexers.index import MemoryIndex

        index = MemoryIndex(self.memdir, embedder=self._embedder, annotator=self._annotator)
        return index

    def _keep_models(self, index: "MemoryIndex") -> None:
        self._embedder, self._annotator = index.embedder, index.annotator

    # writing memories ---------------------------------------------------------------------
    @parameters.group("options", _memory_options)
    def teach(
        self,
        text: Annotated[
            Text, Field(description="The user's exact words, quoted from what they said.")
        ],
        *,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        """Store something the user taught, in the user's own words.

        Stored as a durable teaching only when `text` is quoted word for word from a user turn
        recorded by a trusted path (the client's prompt hook or an import) recently (24 h by
        default). Otherwise it is stored as an inference awaiting the user's confirmation, and
        the reply says so (`stored_as`)."""
        return provenance.teach(self.memdir, text, self._now(), self.window, **options).to_dict()

    @parameters.group("options", _memory_options)
    def infer(
        self,
        text: Annotated[Text, Field(description="What you concluded about the user or the world.")],
        ttl: Annotated[
            str | None,
            Field(description="Time to live unconfirmed, e.g. 3d, 12h (default from memdir.yaml)."),
        ] = None,
        *,
        options: dict[str, Any],
        rationale: Annotated[str | None, Field(description="Why you think so.")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
    ) -> dict[str, Any]:
        """Store an inference (your conclusion): provisional, recalled at reduced weight, and
        expiring after its TTL unless the user confirms it."""
        meta = {
            k: v for k, v in (("rationale", rationale), ("confidence", confidence)) if v is not None
        }
        lifetime = clock.parse_duration(ttl) if ttl else None
        now = self._now()
        written = lifecycle.infer(
            self.memdir, text, now, lifetime, "assistant", meta=meta, **options
        )
        state = lifecycle.load_view(self.memdir, now).resolve(written.id)
        return {"id": written.id, "added": written.added, "status": state.status,
                "expires": state.memory.expires if state.memory else None}  # fmt: skip

    def confirm(
        self,
        memory_id: MemoryId,
        quote: ConfirmingQuote,
    ) -> dict[str, Any]:
        """Confirm an inference on the user's word. `quote` must come from a user turn recorded
        by a trusted path after the inference was made; it is kept as the evidence. Without
        it nothing changes and the reply says to ask the user."""
        return provenance.confirm(self.memdir, memory_id, quote, self._now()).to_dict()

    def reject(
        self,
        memory_id: MemoryId,
        reason: Annotated[
            str, Field(min_length=1, max_length=2000, description="Why it is wrong.")
        ],
        quote: RejectingQuote = None,
    ) -> dict[str, Any]:
        """Mark a memory wrong (kept for audit, never recalled). You may withdraw your own
        unconfirmed inference; anything durable needs the user's words in `quote`."""
        return provenance.reject(self.memdir, memory_id, reason, self._now(), quote).to_dict()

    def forget(
        self,
        memory_id: MemoryId,
        quote: ForgettingQuote,
    ) -> dict[str, Any]:
        """Erase a memory's text for good (privacy), leaving a tombstone. Needs the user's
        request quoted from a recent trusted user turn (24 h by default)."""
        from memdir.usecases.forgetting import documents_present, refresh_derived

        now = self._now()
        present = documents_present(self.memdir)
        outcome = provenance.forget(self.memdir, memory_id, quote, now, self.window)
        if outcome.done:
            refresh_derived(self.memdir, now, present)
        return outcome.to_dict()

    def link(
        self,
        memory_id: MemoryId,
        to: Annotated[str, Field(min_length=1, description="The other memory's id (or prefix).")],
        link_type: Annotated[
            str,
            Field(min_length=1, max_length=64, description="e.g. related, supports, contradicts."),
        ] = "related",
    ) -> dict[str, Any]:
        """Add a typed link between two memories."""
        event = lifecycle.link(
            self.memdir, memory_id, to, link_type, self._now(), actor="assistant"
        )
        return {"event": event.id, "from": event.target, "to": event.to, "type": event.link_type}

    # reading memories ---------------------------------------------------------------------
    def recall(
        self,
        query: Annotated[str, Field(min_length=1, max_length=5000)],
        k: Annotated[int, Field(ge=1, le=50)] = 8,
        explain: Annotated[bool, Field(description="Include every pipeline stage.")] = False,
        components: Annotated[
            bool,
            Field(
                description="Give each result its score components and the query analysis "
                "(the full form; by default each result is its id, text, score and status)."
            ),
        ] = False,
        include_private: Annotated[
            bool, Field(description="Also private memories (only when the user asked).")
        ] = False,
        profile: Annotated[str | None, Field(description="Weight profile.")] = None,
        budget: Annotated[int | None, Field(ge=1, description="Token budget.")] = None,
        persona: Annotated[
            str | None,
            Field(
                max_length=64,
                description="Recall as this persona: memories scoped to "
                "other personas are left out.",
            ),
        ] = None,
        island: Annotated[
            str | None,
            Field(max_length=64, description="Only this island's memories (`island_list`)."),
        ] = None,
        include_journal: Annotated[
            bool,
            Field(
                description="Also search the journal's turns (past and imported conversations) "
                "for the query's words: matching turns come back apart, under `journal`, as "
                "verbatim turns, not memories (normal turns only; they do not change the verdict)."
            ),
        ] = False,
        record: Annotated[
            bool,
            Field(
                description="Record the recall (a rehearsal that slows the recalled memories' "
                "decay); false to look without changing anything. An explain never records."
            ),
        ] = True,
    ) -> dict[str, Any]:
        """Recall the memories that matter for a query, ranked by a blended, explainable score,
        with a verdict: GROUNDED, LOW_CONFIDENCE or NO_DATA. Provisional inferences are marked.
        The recall is recorded (rehearsal), which slows the recalled memories' decay, unless
        `record` is false or `explain` is asked.
        `include_journal` adds the conversation turns that hold the query's words, for a
        detail no memory kept."""
        from memdir.indexers.recall import RecallOptions
        from memdir.usecases.recall import journal_group
        from memdir.usecases.recall import recall as run_recall

        options = RecallOptions(
            k=k,
            profile=profile,
            include_private=include_private,
            budget=budget,
            persona=persona,
            island=island or None,
        )
        index = self._index()
        result = run_recall(self.memdir, query.strip(), self._now(), options,
                            record=record and not explain, actor="assistant", index=index)  # fmt: skip
        self._keep_models(index)
        data = result.to_dict(explain=explain)
        if include_journal:
            data["journal"] = journal_group(self.memdir, result, k, assistant=True)
        return data if components or explain else compact_recall(data)

    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        k: Annotated[int, Field(ge=1, le=100)] = 10,
        include_private: bool = False,
    ) -> dict[str, Any]:
        """Plain full-text search (BM25) over live memories, with highlighted snippets. Each
        result says its status (a provisional inference is marked) and visibility."""
        from memdir.usecases.recall import search

        index = self._index()
        results = search(self.memdir, query, self._now(), k, "search",
                         ("private",) if include_private else (), index)  # fmt: skip
        self._keep_models(index)
        return {"query": query, "results": results}

    def show(
        self,
        memory_id: MemoryId,
        quote: Annotated[
            str | None,
            Field(
                description="For a private memory: the user's words asking about it, quoted "
                "exactly from their recent turn."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """One memory with its current status, provenance and history of events. A private
        memory is shown only with `quote`, the user's words asking about it; sealed never."""
        return provenance.show(self.memdir, memory_id, quote, self._now(), self.window)

    def attachments(self, memory_id: MemoryId) -> dict[str, Any]:
        """The files kept with a memory (images, PDFs, audio, text): each one's name, type,
        size and what was read from it (text, date, place, title, artist). Not a private or
        sealed memory's."""
        from memdir.usecases import attachments

        return attachments.for_assistant(self.memdir, memory_id, self._now())

    def stats(self) -> dict[str, Any]:
        """Counts of memories by status, source and store, and of journal turns."""
        from collections import Counter

        view = lifecycle.load_view(self.memdir, self._now())
        turns = journal.read_journal(self.memdir).turns
        return {
            "memories": len(view),
            "status": dict(Counter(state.status for state in view)),
            "source": dict(Counter(s.memory.source for s in view if s.memory)),
            "store": dict(Counter(s.memory.store for s in view if s.memory)),
            "journal_turns": len(turns),
            "sessions": len({turn.session for turn in turns}),
        }

    # journal, ring, documents -------------------------------------------------------------
    def journal_add(
        self,
        role: Annotated[
            Literal["assistant", "tool"],
            Field(
                description="Whose turn: yours or a tool's. User turns come from the client's hook."
            ),
        ],
        session: Annotated[str, Field(min_length=1, max_length=200)],
        text: Text,
        topic: Annotated[str | None, Field(max_length=200)] = None,
        visibility: Visibility = "normal",
        secrecy: Literal["public", "sensitive", "secret"] = "public",
    ) -> dict[str, Any]:
        """Record an assistant or tool turn verbatim in the raw journal (channel 'mcp')."""
        turn = journal.new_turn(self._now(), role, session, text, channel="mcp",
                                visibility=visibility, secrecy=secrecy, topic=topic)  # fmt: skip
        from memdir.usecases.journal import record_turns

        [(stored, added)] = record_turns(self.memdir, [turn], self._now())
        return {"id": stored.id, "added": added, "at": stored.at, "channel": stored.channel}

    def journal_read(
        self,
        session: Annotated[str | None, Field(description="Only this session.")] = None,
        role: Literal["user", "assistant", "tool"] | None = None,
        since: Annotated[
            str | None, Field(description="ISO date-time: turns at or after it.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        include_private: Annotated[
            bool, Field(description="Also private turns (only when the user asked).")
        ] = False,
    ) -> dict[str, Any]:
        """The latest raw journal turns, oldest first. Sealed and secret turns are never shown.
        A user turn's `trusted` says whether it came from the user's own client hook or an
        import (true) or from an MCP client (false)."""
        now = self._now()
        start = clock.parse_time(since, "since") if since else None
        asked = ("private",) if include_private else ()
        chosen = [
            turn
            for turn in journal.read_journal(self.memdir, until=now).turns
            if (session is None or turn.session == session)
            and (role is None or turn.role == role)
            and (start is None or turn.moment >= start)
            and turn.text_on("journal_read (MCP)", asked) is not None
        ][-limit:]
        return {"turns": [{**turn.to_line(), "trusted": turn.trusted} for turn in chosen]}

    def ring(self) -> dict[str, Any]:
        """The console ring, newest first: the last 30 things that were live (taught, confirmed,
        recalled) and still are; a private memory's text is masked."""
        from memdir.usecases.documents import ring_slots

        return {"slots": ring_slots(self.memdir, self._now())}

    def wake(
        self,
        budget: Annotated[int | None, Field(ge=50, le=20000, description="Token budget.")] = None,
        persona: Annotated[
            str | None, Field(max_length=64, description="Wake as this persona.")
        ] = None,
        island: Annotated[
            str | None,
            Field(max_length=64, description="Only this island's memories in the memory sections."),
        ] = None,
    ) -> dict[str, Any]:
        """The wake document for a new conversation: date and time since the last session,
        hard facts, people, recent teachings, the review queue, what needs the user's decision,
        open threads, the emotional arc and the raw window of recent user turns, as markdown
        within a token budget. With a persona, memories scoped to other personas are left out;
        with an island, the memory sections hold only its members."""
        from memdir.usecases.documents import wake

        document = wake(self.memdir, self._now(), budget, persona=persona, island=island or None)
        return document.to_dict()

    def boot(self) -> dict[str, Any]:
        """The boot document (documents/boot.md as it would be written now): today, recent
        events, the emotional arc, recent teachings, hard facts and the review queue."""
        from memdir.usecases.documents import boot_markdown, gather

        return {"markdown": boot_markdown(gather(self.memdir, self._now()))}

    def core(
        self,
        budget: Annotated[int | None, Field(ge=50, le=20000, description="Token budget.")] = None,
    ) -> dict[str, Any]:
        """The core: the self notes, the hard facts (keyed, pinned, FINANCIAL or MEDICATION
        teachings, at any age) and the high-importance milestones, within a token budget."""
        from memdir.usecases.core import core

        return core(self.memdir, self._now(), budget)

    def room(
        self,
        session: Annotated[
            str | None,
            Field(max_length=200, description="The session (default: the latest turn's)."),
        ] = None,
        turns: Annotated[int, Field(ge=1, le=200, description="The session's last N turns.")] = 20,
    ) -> dict[str, Any]:
        """Read the room: the affect of the conversation's recent turns (valence, arousal,
        strongest emotion), the user's mood over them and whether the counterweights would
        engage. Only normal turns count (a private or sensitive one is left out)."""
        from memdir.usecases.room import room

        return room(self.memdir, self._now(), session, turns, surface="room (MCP)")

    def song_list(
        self,
        mood: Mood = None,
        feeling: Feeling = None,
    ) -> dict[str, Any]:
        """The user's songs (title, artist, moods, the memories they are tied to), by mood or
        by how they feel against a text: e.g. a song for how the user feels right now."""
        from memdir.usecases.songs import listed

        return {"songs": listed(self.memdir, self._now(), mood, feeling, "song list (MCP)")}

    # islands ------------------------------------------------------------------------------
    def island_list(self) -> dict[str, Any]:
        """The islands (named groups of memories): name, what each is about, its size."""
        from memdir.usecases.islands import listed

        return {"islands": listed(self.memdir, self._now())}

    def island_show(
        self, name: Annotated[str, Field(min_length=1, max_length=64, description="The island.")]
    ) -> dict[str, Any]:
        """One island's members, with their status (a private or sealed member is left out)."""
        from memdir.usecases.islands import shown

        return shown(self.memdir, name, self._now(), surface="island show (MCP)")

    # self and people ----------------------------------------------------------------------
    def self_read(self) -> dict[str, Any]:
        """The self notes: who you are to this user (name, tone, commitments)."""
        return {"fields": people.read_self(self.memdir)}

    def self_update(self, values: Fields = {}, remove: Remove = []) -> dict[str, Any]:  # noqa: B006
        """Set or remove fields of the self notes (each remembers when, and that you set it)."""
        fields = people.update_self(self.memdir, values, remove, self._now(), by="assistant")
        return {"fields": fields}

    def people_read(
        self, name: Annotated[str | None, Field(description="One person, or everyone.")] = None
    ) -> dict[str, Any]:
        """The people notes: the people the user talks about, with their fields."""
        everyone = people.read_people(self.memdir)
        if name is None:
            return {"people": everyone}
        if name not in everyone:
            raise _Refused(
                f"no person named {name!r}; known: {', '.join(sorted(everyone)) or 'none'}"
            )
        return {"people": {name: everyone[name]}}

    def person_update(
        self,
        name: Annotated[str, Field(min_length=1, max_length=64)],
        values: Fields = {},  # noqa: B006
        remove: Remove = [],  # noqa: B006
        delete: Annotated[bool, Field(description="Remove the person entirely.")] = False,
    ) -> dict[str, Any]:
        """Create or update a person in the people notes (or delete them). These are your
        notes, marked as set by the assistant — not teachings."""
        if delete:
            people.remove_person(self.memdir, name, self._now())
            return {"deleted": name}
        fields = people.update_person(
            self.memdir, name, values, remove, self._now(), by="assistant"
        )
        return {"name": name, "fields": fields}


class _Refused(MemdirError):
    """A request the server turns down (shown to the model as a tool error)."""


# name → (title, read-only, destructive, idempotent)
TOOLS: dict[str, tuple[str, bool, bool, bool]] = {
    "teach": ("Teach (user's own words)", False, False, True),
    "infer": ("Infer (provisional)", False, False, True),
    "confirm": ("Confirm an inference", False, False, True),
    "reject": ("Reject a memory", False, True, True),
    "forget": ("Forget a memory", False, True, True),
    "link": ("Link two memories", False, False, False),
    "recall": ("Recall", False, False, False),
    "search": ("Full-text search", True, False, True),
    "show": ("Show a memory", True, False, True),
    "attachments": ("A memory's attached files", True, False, True),
    "stats": ("Statistics", True, False, True),
    "journal_add": ("Journal: add a turn", False, False, True),
    "journal_read": ("Journal: read turns", True, False, True),
    "ring": ("Console ring", True, False, True),
    "wake": ("Wake document", True, False, True),
    "boot": ("Boot document", True, False, True),
    "core": ("Core memories", True, False, True),
    "room": ("Read the room", True, False, True),
    "song_list": ("List songs", True, False, True),
    "island_list": ("List islands", True, False, True),
    "island_show": ("Show an island", True, False, True),
    "self_read": ("Read self", True, False, True),
    "self_update": ("Update self", False, True, True),
    "people_read": ("Read people", True, False, True),
    "person_update": ("Update a person", False, True, True),
}


def _serialised(
    method: F, lock: threading.Lock, tool_error: type[Exception], memdir: Memdir | None = None
) -> F:
    """One call at a time; memdir's own errors become tool errors the model can read. Each
    call first re-applies the forgets a merge may have undone (tombstones.catch_up)."""

    # Not the method's __dict__: a grouped tool's __signature__ there still lists `self`, while
    # inspect.signature, following __wrapped__ to the bound method, leaves it out.
    @functools.wraps(method, updated=())
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                if memdir is not None:
                    tombstones.catch_up(memdir)
                return method(*args, **kwargs)
            except MemdirError as error:
                hint = f" (hint: {error.hint})" if error.hint else ""
                raise tool_error(f"{error.message}{hint}") from None

    return call  # type: ignore[return-value]


def _argument_error(tool: str, error: Any) -> str:
    """The first rejected argument of a validation error, as one readable line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
    message = str(first.get("msg", "invalid")).replace("Input should be", "expected")
    more = len(error.errors()) - 1
    return f"{tool}: invalid argument {where}: {message}" + (f" (and {more} more)" if more else "")


def build_server(memdir: Memdir, window: timedelta = provenance.DEFAULT_WINDOW) -> Any:
    """The MCPServer with every tool registered (also used in-process by tests)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
    from pydantic import ValidationError

    from memdir import __version__

    class StrictServer(MCPServer):
        """Unknown arguments are refused (a misspelt field must not look like success), and a
        rejected argument is one line naming it, without the validator's own report."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            tool = self._tool_manager.get_tool(name)
            if tool is not None:
                known = set(tool.parameters.get("properties", {}))
                unknown = sorted(set(arguments) - known)
                if unknown:
                    raise ToolError(
                        f"{name}: unknown argument {', '.join(map(repr, unknown))}; "
                        f"it takes {', '.join(sorted(known)) or 'none'}"
                    )
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as error:
                if isinstance(error.__cause__, ValidationError):
                    raise ToolError(_argument_error(name, error.__cause__)) from None
                raise

    server = StrictServer(
        "memdir",
        title="memdir",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    tools = MemdirTools(memdir, window)
    lock = threading.Lock()
    for name, (title, read_only, destructive, idempotent) in TOOLS.items():
        hints = ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                                idempotent_hint=idempotent, open_world_hint=False)  # fmt: skip
        server.add_tool(_serialised(getattr(tools, name), lock, ToolError, memdir), name=name,
                        title=title, annotations=hints)  # fmt: skip
    return server


def serve(memdir: Memdir, window: timedelta = provenance.DEFAULT_WINDOW) -> None:
    """Serve over stdio until the client closes the connection."""
    server = build_server(memdir, window)
    log.info("serving %s over MCP (stdio)", memdir.root)
    server.run("stdio")


MAX_HTTP_BODY = 1 << 20  # bytes of one HTTP request
LOOPBACK = ("127.0.0.1", "localhost", "::1")


# RFC 6750 §3.1, which the MCP authorization spec builds on: a request without credentials gets
# a bare `Bearer` challenge; one whose bearer token is wrong gets `error="invalid_token"`. No
# `resource_metadata` is named and the OAuth discovery paths answer 404, so a client that
# follows the spec reports the token instead of starting an OAuth flow memdir does not offer.
NO_TOKEN = (b'Bearer realm="memdir"',
            b'{"error": "a bearer token is required (memdir mcp --show-token prints it)"}')  # fmt: skip
BAD_TOKEN = (
    b'Bearer realm="memdir", error="invalid_token", error_description="not this server\'s token"',
    b'{"error": "invalid_token", "error_description": "the bearer token is not this server\'s'
    b' (memdir mcp --show-token prints the current one; --rotate-token replaces it)"}',
)


def bearer_guard(app: Any, token_file: Any) -> Any:
    """The ASGI app behind a bearer-token check: 401 (with WWW-Authenticate) without the token
    in `token_file`, which is read on each request (so a rotation applies at once): "required"
    when no bearer token came, "invalid_token" when a wrong one did."""
    from memdir.usecases.mcp_token import authorised

    async def answer(send: Any, status: int, challenge: bytes | None, body: bytes) -> None:
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]  # fmt: skip
        if challenge is not None:
            headers.append((b"www-authenticate", challenge))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if str(scope.get("path", "")).startswith("/.well-known/"):
                await answer(send, 404, None, b'{"error": "no OAuth here: use the bearer token"}')
                return
            headers = {key.decode("latin-1").lower(): value.decode("latin-1")
                       for key, value in scope.get("headers", [])}  # fmt: skip
            given = headers.get("authorization")
            if not authorised(given, token_file):
                bearer = (given or "").partition(" ")[0].lower() == "bearer"
                challenge, body = BAD_TOKEN if bearer else NO_TOKEN
                await answer(send, 401, challenge, body)
                return
        await app(scope, receive, send)

    return guarded


def http_app(memdir: Memdir, host: str, port: int, window: timedelta) -> Any:
    """The streamable-HTTP app: the SDK's (body size limit, DNS-rebinding protection with this
    host and port only, no CORS middleware at all) behind the bearer guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    from memdir.usecases.mcp_token import token_path

    names = {host, *(LOOPBACK if host in LOOPBACK else ())}
    hosts = [f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{name}" for name in hosts],
    )
    app = build_server(memdir, window).streamable_http_app(
        max_request_body_size=MAX_HTTP_BODY, transport_security=security, host=host
    )
    return bearer_guard(app, token_path(memdir))


def serve_http(memdir: Memdir, host: str, port: int,
               window: timedelta = provenance.DEFAULT_WINDOW) -> None:  # fmt: skip
    """Serve over streamable HTTP at http://HOST:PORT/mcp until SIGTERM or Ctrl-C."""
    import uvicorn

    app = http_app(memdir, host, port, window)
    log.info("serving %s over MCP (streamable HTTP) at http://%s:%d/mcp", memdir.root, host, port)
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on",
                limit_concurrency=64, timeout_graceful_shutdown=5)  # fmt: skip
