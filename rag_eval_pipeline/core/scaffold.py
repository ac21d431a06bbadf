"""``rag-eval init DIR``: a suite made from a team's files, without a question asked.

:func:`survey` looks at what a folder holds (its files and first-level sub-folders) and tells them
apart by their content, never by their names alone:

- a corpus: a JSONL/Parquet file whose records have ``chunk_id``, ``doc_id`` and ``text`` (``corpus.source:
  chunks``), else a sub-folder (or the folder itself) of ``.md``/``.txt`` documents (``documents_dir``),
  else a BEIR folder (``corpus.jsonl`` + ``queries.jsonl``, which carries its own questions);
- a golden set: records with ``question_id``, ``question`` and ``answerability``;
- run logs: records with ``question_id`` and ``retrieved`` (one ``logged`` system each);
- traces: OTLP JSON lines (``resourceSpans``) or a Phoenix spans export (``context.trace_id``): one
  ``traces`` system each;
- a chunk map: records with ``document_id`` and ``chunk_id``.

For each log and trace file it compares the ids its system retrieved with the corpus's chunk ids and
picks the id mapping that makes them meet (``core/systems/id_mapping.py``): none, ``strip_prefix``,
``doc_ids``, a chunk map file found beside, or text alignment (hits with passage text only). :func:`
render_config` writes a commented ``config.yaml`` for it, and :func:`example_golden_lines` one golden
line per answerability class, with the corpus's own ids.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.errors import EvalError

_RECORD_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".json")
_DOC_SUFFIXES = (".md", ".txt")
_PEEK = 200
_LANGUAGES = {"es": ("spanish", "es"), "en": ("english", "en"), "fr": ("french", "fr"), "de": ("german", "de"),
              "it": ("italian", "it"), "pt": ("portuguese", "pt"), "nl": ("dutch", "nl")}


@dataclass
class FoundSystem:
    """One system found in the folder: ``name``, ``kind`` (logged / traces), ``path`` (relative to the
    folder), ``chunk_map`` (the mapping chosen, or None), ``why`` (one line saying how the ids meet)."""

    name: str
    kind: str
    path: str
    chunk_map: Any = None
    why: str = ""


@dataclass
class Survey:
    """What :func:`survey` found in a folder (paths relative to it)."""

    folder: Path
    corpus_source: str | None = None
    corpus_path: str | None = None
    golden_path: str | None = None
    systems: list[FoundSystem] = field(default_factory=list)
    chunk_maps: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    language: str | None = None
    golden_has_docs: bool = False
    notes: list[str] = field(default_factory=list)


def _peek(path: Path, n: int = _PEEK) -> list[dict]:
    """The first ``n`` records of a JSONL/JSON/Parquet file ([] when it cannot be read)."""
    try:
        if path.suffix.lower() == ".parquet":
            import polars as pl

            return pl.read_parquet(path, n_rows=n).to_dicts()
        out = []
        with path.open(encoding="utf-8-sig") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    if isinstance(obj, dict):
                        out.append(obj)
                    if len(out) >= n:
                        break
        return out
    except (OSError, ValueError, EvalError):
        return []
    except Exception:  # noqa: BLE001 - a damaged Parquet file: not one of ours, left for check to report
        return []


def _kind_of(records: list[dict]) -> str | None:
    if not records:
        return None
    keys = set(records[0])
    if "resourceSpans" in keys:
        return "traces"
    if "context.trace_id" in keys or "context" in keys and isinstance(records[0].get("context"), dict):
        return "traces"
    if {"chunk_id", "doc_id", "text"} <= keys:
        return "chunks"
    if {"document_id", "chunk_id"} <= keys:
        return "chunk_map"
    if {"question_id", "question", "answerability"} <= keys:
        return "golden"
    if {"question_id", "retrieved"} <= keys:
        return "log"
    return None


def _name(stem: str, taken: set[str]) -> str:
    base = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in stem).strip("_-") or "system"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def survey(folder: str | Path) -> Survey:
    """Tell apart the files of ``folder`` (module docstring). Output: a :class:`Survey`. Raises nothing
    for unreadable files (they are skipped with a note); OSError when the folder cannot be listed."""
    root = Path(folder).resolve()
    found = Survey(folder=root)
    entries = sorted(p for p in root.iterdir() if not p.name.startswith((".", "_")))
    logs: list[Path] = []
    traces: list[Path] = []
    # a documents corpus is a sub-folder (documents beside config.yaml would be read with it)
    doc_folders = [p for p in entries if p.is_dir() and any(q.suffix in _DOC_SUFFIXES for q in p.iterdir())]
    for p in entries:
        if p.is_dir() and (p / "corpus.jsonl").is_file() and (p / "queries.jsonl").is_file():
            found.corpus_source = found.corpus_source or "beir"
            found.corpus_path = found.corpus_path or p.name
            continue
        if not p.is_file() or p.suffix.lower() not in _RECORD_SUFFIXES or p.name.startswith("golden.example"):
            continue
        kind = _kind_of(_peek(p, 1))
        if kind == "chunks" and found.corpus_source != "chunks":
            found.corpus_source, found.corpus_path = "chunks", p.name
        elif kind == "golden" and found.golden_path is None:
            found.golden_path = p.name
        elif kind == "log":
            logs.append(p)
        elif kind == "traces":
            traces.append(p)
        elif kind == "chunk_map":
            found.chunk_maps.append(p.name)
        elif kind is None and p.suffix.lower() != ".json":
            found.notes.append(f"{p.name}: not recognised (expected chunks, a golden set, a run log, traces or a "
                               "chunk map); left out")
    if found.corpus_source is None and doc_folders:
        found.corpus_source, found.corpus_path = "documents_dir", doc_folders[0].name
    _read_corpus_ids(found)
    if found.golden_path:
        golden = _peek(root / found.golden_path, 10_000)
        found.golden_has_docs = any(r.get("relevant_docs") for r in golden)
    taken: set[str] = set()
    for p in logs:
        found.systems.append(_system(found, _name(p.stem, taken), "logged", p))
    for p in traces:
        found.systems.append(_system(found, _name(p.stem.removesuffix(".otlp"), taken), "traces", p))
    return found


def _read_corpus_ids(found: Survey) -> None:
    """The corpus's chunk and doc ids and main language, read with the source's own reader (nothing on error:
    ``rag-eval check`` reports it)."""
    if found.corpus_source in (None, "beir") or found.corpus_path is None:
        return
    try:
        if found.corpus_source == "chunks":
            from rag_eval_pipeline.core.sources.chunks import load_chunks

            snap = load_chunks(found.folder / found.corpus_path)
        else:
            from rag_eval_pipeline.core.corpus import chunk_documents
            from rag_eval_pipeline.core.sources.documents import load_documents_dir

            snap = chunk_documents(load_documents_dir(found.folder / found.corpus_path))
    except EvalError as exc:
        found.notes.append(f"corpus {found.corpus_path} does not read yet ({' '.join(str(exc).split())[:300]}); "
                           "rag-eval check says more")
        return
    found.chunk_ids = snap["chunk_id"].to_list()
    found.doc_ids = snap["doc_id"].unique(maintain_order=True).to_list()
    langs = Counter(x for x in snap["language"].to_list() if x)
    found.language = langs.most_common(1)[0][0] if langs else None


def _hit_ids(path: Path, kind: str) -> tuple[list[str], int]:
    """(retrieved ids seen in the first records, hits given by text only)."""
    ids, texts = [], 0
    for rec in _peek(path):
        if kind == "logged":
            for h in rec.get("retrieved") or []:
                if isinstance(h, str):
                    ids.append(h)
                elif isinstance(h, dict) and isinstance(h.get("chunk_id"), str):
                    ids.append(h["chunk_id"])
                elif isinstance(h, dict) and h.get("text"):
                    texts += 1
        else:
            for rs in rec.get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    for s in ss.get("spans") or []:
                        for a in s.get("attributes") or []:
                            key, value = a.get("key", ""), (a.get("value") or {}).get("stringValue")
                            if key.startswith("retrieval.documents.") and key.endswith(".document.id") and value:
                                ids.append(value)
                            elif key.startswith("retrieval.documents.") and key.endswith(".document.content"):
                                texts += 1
    return ids, texts


def _system(found: Survey, name: str, kind: str, path: Path) -> FoundSystem:
    system = FoundSystem(name=name, kind=kind, path=path.name)
    ids, texts = _hit_ids(path, kind)
    known, docs = set(found.chunk_ids), set(found.doc_ids)
    if not known or not ids:
        system.why = ("passages given by text only: aligned to the corpus by text" if texts and not ids else
                      "ids not compared (the corpus did not read); rag-eval check compares them")
        return system
    if all(i in known for i in ids):
        system.why = "its ids are the corpus's chunk ids"
        return system
    prefix = _common_prefix(ids, known)
    if prefix:
        system.chunk_map = {"strip_prefix": prefix}
        system.why = f"its ids are the corpus's chunk ids behind the prefix {prefix!r}"
        return system
    if all(i in docs for i in ids):
        system.chunk_map = {"doc_ids": True}
        system.why = "its ids are document ids: scored at document level (give relevant_docs in the golden set)"
        return system
    for m in found.chunk_maps:
        mapping = {r.get("document_id"): r.get("chunk_id") for r in _peek(found.folder / m, 1_000_000)}
        if all(i in mapping for i in ids):
            system.chunk_map = m
            system.why = f"its ids are translated by {m}"
            return system
    system.why = ("its ids are not the corpus's chunk ids (e.g. " + repr(next(i for i in ids if i not in known))
                  + "): set chunk_map (a file of {document_id, chunk_id}, strip_prefix, or doc_ids: true)")
    return system


def _doc_ids_only(system: FoundSystem) -> bool:
    """Whether init mapped ``system``'s ids as document ids (``chunk_map: {doc_ids: true}``)."""
    return isinstance(system.chunk_map, dict) and bool(system.chunk_map.get("doc_ids"))


def _common_prefix(ids: list[str], known: set[str]) -> str | None:
    """The prefix that, removed, turns every id into a known chunk id (None when there is none)."""
    first = ids[0]
    for cut in range(1, len(first)):
        prefix = first[:cut]
        if first[cut:] in known and all(i.startswith(prefix) and i[cut:] in known for i in ids):
            return prefix
    return None


def example_golden_lines(found: Survey) -> list[str]:
    """One example golden line per answerability class, with the corpus's own ids (placeholders when the
    corpus did not read). Output: JSON lines without newlines."""
    chunk = found.chunk_ids[0] if found.chunk_ids else "CHUNK_ID"
    doc = found.doc_ids[0] if found.doc_ids else "DOC_ID"
    rows = [
        {"question_id": "example-answerable", "question": "A question your documents answer?",
         "answerability": "answerable", "relevant": [{"chunk_id": chunk, "grade": 2}],
         "relevant_docs": [{"doc_id": doc, "grade": 2}],
         "reference_answer": "The answer a person who knows the content would give.",
         "claims": [{"claim_id": "c1", "text": "One fact of the reference answer.", "supporting": [chunk]}],
         "split": "test", "segments": {"topic": "example"}, "user_groups": ["customers"]},
        {"question_id": "example-absent", "question": "A question your documents do not answer?",
         "answerability": "absent", "split": "test"},
        {"question_id": "example-clarify", "question": "A question too vague to answer without asking back?",
         "answerability": "clarify", "split": "dev"},
    ]
    return [json.dumps(r, ensure_ascii=False) for r in rows]


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


#: The comment above the starter gates ``init`` writes: what they are and how to change them.
_STARTER_GATES_NOTE = (
    "  # Starter gates on retrieval and abstention: neither needs a judge, so no calibration first. Each",
    "  # blocks promotion when the candidate is worse than the baseline, on the questions both answered, by",
    "  # more than max_abs_drop (max_rel_drop: a share of the baseline). Loosen or tighten the numbers, add",
    "  # min_value for a floor, or blocking: false to only warn (the manual: docs/gates-and-reports.md).",
)


def _starter_gates(recall: bool) -> list[str]:
    """The starter ``gates.thresholds`` lines: recall@5 (when the systems' ids can be scored against the golden
    set's relevance, ``recall``) and the false abstention rate (lower is better), with a commented floor."""
    gates = ["    - {metric: false_abstention_rate, max_abs_drop: 0.10, higher_is_better: false}   # answerable "
             "questions it declined"]
    if recall:
        gates.insert(0, "    - {metric: recall_5, max_abs_drop: 0.05}     # share of the relevant chunks in the top 5")
    else:
        gates.insert(0, "    # - {metric: recall_5, max_abs_drop: 0.05}   # needs relevant_docs in the golden set: "
                        "the system gives document ids")
    return gates + ["    # - {metric: recall_5, min_value: 0.5}       # a floor: the candidate's own mean must "
                    "reach it"]


def render_config(found: Survey) -> str:
    """The commented ``config.yaml`` for a survey (paths relative to its folder). Raises ValueError when
    the folder holds no corpus."""
    if found.corpus_source is None:
        raise ValueError("no corpus found: expected a chunks file (JSONL/Parquet records with chunk_id, doc_id, "
                         "text), a folder of .md/.txt documents, or a BEIR folder")
    corpus_path = str(found.corpus_path)  # set whenever a corpus source was found
    lines = ["# Made by rag-eval init from the files of this folder. Relative paths are resolved against this file.",
             "# Next: rag-eval check --config config.yaml, then rag-eval estimate, then rag-eval run.", "corpus:"]
    if found.corpus_source == "chunks":
        lines += ["  source: chunks                 # your chunks, your chunk ids (kept as they are)",
                  f"  path: {_yaml_str(corpus_path)}"]
    elif found.corpus_source == "documents_dir":
        lines += ["  source: documents_dir          # one .md/.txt file per document, chunked here",
                  f"  path: {_yaml_str(corpus_path)}",
                  "  chunking: {strategy: paragraphs, max_chars: 1200}   # chunk ids are doc_id#n"]
    else:
        lines += ["  source: beir                   # corpus.jsonl, queries.jsonl, qrels/<split>.tsv",
                  f"  path: {_yaml_str(corpus_path)}", "  split: test"]
    if found.corpus_source != "beir":
        golden = found.golden_path or "golden.jsonl"
        note = ("relevance per document (relevant_docs) found: retrieval is also scored per document"
                if found.golden_has_docs else "relevant (chunk ids) and/or relevant_docs (doc ids), graded")
        lines += ["golden:", f"  path: {_yaml_str(golden)}" + ("" if found.golden_path else
                  "             # not found: write it (golden.example.jsonl shows one line per class)"),
                  f"  # {note}"]
    lines += ["", "systems:"]
    if not found.systems:
        lang, stop = _LANGUAGES.get((found.language or "en")[:2], ("english", "en"))
        lines += ["  # No run log or traces found: the built-in reference RAG (BM25 + extractive answers) stands in,",
                  "  # so that a first run works. Add your own system below (a log, traces, http or python).",
                  "  - name: bm25_k5", "    kind: reference",
                  f"    retriever: {{type: bm25, language: {lang}, stopwords: {stop}, k: 5}}",
                  "    generator: {type: extractive, abstain_threshold: 0.5, context_k: 3}"]
    for s in found.systems:
        lines += [f"  # {s.why}", f"  - name: {s.name}", f"    kind: {s.kind}", f"    path: {_yaml_str(s.path)}"]
        if s.kind == "traces":
            lines += ["    # question_id_attribute: metadata.question_id   # else the root span's input.value is "
                      "matched to the question text",
                      "    # decision_attribute: metadata.decision"]
        if isinstance(s.chunk_map, dict):
            inner = ", ".join(f"{k}: {_yaml_str(v) if isinstance(v, str) else str(v).lower()}"
                              for k, v in s.chunk_map.items())
            lines.append(f"    chunk_map: {{{inner}}}")
        elif s.chunk_map:
            lines.append(f"    chunk_map: {_yaml_str(s.chunk_map)}")
    lines += ["  # A live system, called once per golden question (see the manual, \"Evaluate your own system\"):",
              "  # - name: my_rag_http",
              "  #   kind: http",
              "  #   url: http://127.0.0.1:8000/answer   # POST {question_id, question, user_groups}",
              "  #   chunk_map: {strip_prefix: \"kb://\"}  # when its ids are not the corpus's",
              "  # - name: my_rag_python",
              "  #   kind: python",
              "  #   callable: my_rag:answer             # my_rag.py beside this file: answer(question_id, question, "
              "user_groups)",
              "", "metrics:", "  ks: [1, 3, 5, 10]", "  ranking_mode: system           # system | trec_eval",
              "", "judge:", "  type: rule_based               # offline; an OpenAI-compatible endpoint: see the manual",
              "", "gates:", "  split: test"]
    # the baseline is a system whose gated recall_5 can be computed: a system of document ids has no chunk-level
    # values (core.pipeline.scored_levels), so one of chunk ids goes first (sorted() keeps the folder's order else)
    ordered = sorted(found.systems, key=lambda s: _doc_ids_only(s) and not found.golden_has_docs)
    names = [s.name for s in ordered] or ["bm25_k5"]
    if len(names) > 1:
        if _doc_ids_only(ordered[0]) and not found.golden_has_docs:
            lines += ["  # every system gives document ids and the golden set judges chunks only: recall_5 cannot be "
                      "computed for them;", "  # give relevant_docs in the golden set (rag-eval check says which gate "
                      "cannot be computed)"]
        lines += [f"  baseline_system: {names[0]}", f"  candidate_systems: [{', '.join(names[1:])}]",
                  *_STARTER_GATES_NOTE, "  thresholds:", *_starter_gates(recall=True)]
    else:
        # one system: no baseline yet. The first run promotes it (nothing to compare: the verdict is
        # inconclusive and says so); every later run is compared with it by these gates
        recall = not (ordered and _doc_ids_only(ordered[0]) and not found.golden_has_docs)
        lines += ["  # baseline_system: ...          # with two systems: compare a candidate against a baseline",
                  "  # One system: the first run's promotion becomes the baseline (nothing to compare yet, so that",
                  "  # run is INCONCLUSIVE); from the next run on, these gates compare each run with it.",
                  *_STARTER_GATES_NOTE, "  thresholds:", *_starter_gates(recall=recall)]
    lines += ["  max_run_error_share: 0.10      # a system whose runs errored more often blocks promotion", "",
              "seed: 0", "quick_subset_size: 24", ""]
    return "\n".join(lines)


__all__ = ["FoundSystem", "Survey", "example_golden_lines", "render_config", "survey"]
