"""Every exit status of ``rag-eval``, declared once.

:data:`EXIT_CODES` is the one table: for each status, what it means for each command that can return
it. ``rag-eval --help``, each ``rag-eval COMMAND --help`` and the manual's table are rendered from it
(:func:`epilog`, :func:`overview`, :func:`markdown_table`); a command module returns the constants
below, never a bare number. A new command adds its meanings here.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED, EXIT_KILLED = 0, 1, 2, 3, 137

#: The meaning of status 2, shared by every command (a command may add its own cases).
USAGE_MEANING = ("a usage or configuration mistake, before anything starts: a bad option, an unknown suite, a "
                 "configuration that does not load, a path the configuration names that does not exist "
                 "(corpus.path, golden.path, calibration.human_labels, a system's log or traces path: the file, "
                 "line and key named), a misconfigured judge "
                 "(RAG_EVAL_JUDGE=openai_compatible without RAG_EVAL_JUDGE_BASE_URL or RAG_EVAL_JUDGE_MODEL, an "
                 "unknown judge name), a port in use")


@dataclass(frozen=True)
class ExitCode:
    """One exit status: ``code``, ``meanings`` (command name -> what the status means there) and
    ``shared``: a meaning common to every command listed, which ``meanings`` then only extends."""

    code: int
    meanings: dict[str, str]
    shared: str = ""

    def meaning(self, command: str) -> str:
        """What the status means for ``command`` (KeyError when the command cannot return it)."""
        own = self.meanings[command]
        return "; ".join(m for m in (self.shared, own) if m)


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, {
        "init": "the configuration and the example golden lines were written",
        "check": "no problem found",
        "run": "the run succeeded and every blocking check passed (warnings do not count)",
        "compare": "the comparison was written (whatever it found: a regression is not an error)",
        "estimate": "the estimate was printed",
        "serve": "stopped cleanly (Ctrl-C or SIGTERM)",
        "label": "stopped cleanly (Ctrl-C or SIGTERM)",
        "serve-reference": "stopped cleanly (Ctrl-C or SIGTERM)",
    }),
    ExitCode(EXIT_FAILED, {
        "check": "bad input data (corpus, golden set, a log or trace file, a chunk_map file, a golden question "
                 "without a run row, a damaged promoted baseline in the output folder): one line per problem names "
                 "the file, line and field",
        "run": "bad input data or a damaged promoted baseline found before the run (as rag-eval check: no Dagster "
               "run is started), a step failed "
               "or a blocking check failed (a CI system can call rag-eval run directly)",
        "compare": "a data mistake: a table a side needs is missing or unreadable (the message names the file)",
        "estimate": "bad input data (corpus, golden set, a run log): the message names the file, line and field",
        "label": "a data mistake: the suite's tables are not written yet (rag-eval run first), a bad label file, "
                 "nothing to label for your groups",
        "serve-reference": "bad corpus data: the message names the file, line and field",
    }),
    ExitCode(EXIT_USAGE, {
        "init": "the folder does not exist, holds nothing to evaluate, or already has a config.yaml (--force "
                "replaces it)",
        "check": "a python callable that does not import, an http system whose secret variable is unset or "
                 "(with --reach) whose URL does not answer, an output folder that is a file, cannot be written or "
                 "belongs to another suite",
        "run": "an --output that is a file, cannot be written or belongs to another suite (each output folder "
               "records its suite); --wait-s that is not a finite number >= 0; a python callable that does not "
               "import or an http secret that is unset (as rag-eval check)",
        "compare": "a side that does not resolve (bad syntax, no such system, night, run id or folder, nothing "
                   "promoted yet), a --metric the runs have no per-question values for",
        "estimate": "a python callable that does not import (as rag-eval check)",
        "serve": "a folder that does not exist",
        "label": "a configuration without a calibration section",
        "serve-reference": "a system that is unknown or not of kind reference",
    }, shared=USAGE_MEANING),
    ExitCode(EXIT_LOCKED, {
        "run": "another run is writing the same output folder (rag-eval run --wait-s N waits for it)",
    }),
    ExitCode(EXIT_KILLED, {
        "run": "SIGTERM or Ctrl-C and the run did not stop within 3 s: the watchdog killed it (the folder stays "
               "as it was)",
    }),
)


def commands() -> list[str]:
    """Every command named in :data:`EXIT_CODES`, in first-mention order."""
    seen: list[str] = []
    for e in EXIT_CODES:
        seen += [c for c in e.meanings if c not in seen]
    return seen


def _by_meaning(e: ExitCode) -> dict[str, list[str]]:
    """Meaning -> the commands it applies to; a shared meaning first, then each command's own addition."""
    out: dict[str, list[str]] = {}
    if e.shared:
        out[e.shared] = list(e.meanings)
    for command, meaning in e.meanings.items():
        if meaning:
            out.setdefault(("also " if e.shared else "") + meaning, []).append(command)
    return out


def epilog(command: str) -> str:
    """The ``exit codes:`` block of ``rag-eval COMMAND --help``: one entry per status ``command`` can return.

    Raises KeyError for a command with no entry in :data:`EXIT_CODES`."""
    rows = [(e.code, e.meaning(command)) for e in EXIT_CODES if command in e.meanings]
    if not rows:
        raise KeyError(f"no exit codes declared for command {command!r}")
    return "exit codes:\n" + "\n".join("\n".join(textwrap.wrap(meaning, 110, initial_indent=f"  {code:<4} ",
                                                               subsequent_indent=" " * 7)) for code, meaning in rows)


def overview() -> str:
    """The ``exit codes`` block of ``rag-eval --help``: every status, each command's meaning on its own line."""
    lines = ["exit codes (rag-eval COMMAND --help lists each command's own):"]
    for e in EXIT_CODES:
        by_meaning = _by_meaning(e)
        for i, (meaning, names) in enumerate(by_meaning.items()):
            lead = f"  {e.code:<4} " if i == 0 else " " * 7
            lines += textwrap.wrap(f"{', '.join(names)}: {meaning}", 110, initial_indent=lead,
                                   subsequent_indent=" " * 9)
    return "\n".join(lines)


def markdown_table() -> str:
    """The manual's table (Markdown): one row per status and meaning, with the commands that return it."""
    rows = ["| exit code | meaning | commands |", "|---|---|---|"]
    for e in EXIT_CODES:
        for meaning, names in _by_meaning(e).items():
            rows.append(f"| {e.code} | {meaning} | {', '.join(f'`{n}`' for n in names)} |")
    return "\n".join(rows)
