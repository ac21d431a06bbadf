"""Id mapping for every kind: a system that names chunks its own way (a prefix, a map file, passage text only)
gets the same metrics as the equivalent log in the snapshot's chunk ids.

The reference is the sample team's log (``data/sample/runs/team_rag.jsonl``). Each kind is fed the same
answers with other ids: ``logged`` (three logs), ``python`` (a module in the configuration's folder, not on
``sys.path``), ``http`` (a real server on 127.0.0.1) and ``traces`` (OTLP JSON written with the real SDK by
``data/traces/make_sample_traces.py``); every per-question metric but latency must be equal."""

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.pipeline import build_golden, build_question_metrics, build_runs, build_snapshot
from rag_eval_pipeline.core.systems.id_mapping import IdMapper, normalise_passage
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.core.systems.live_servers import RagFaultServer

TEAM_LOG = SAMPLE_DIR / "runs" / "team_rag.jsonl"
PREFIX = "kb://"


def _load_traces_script():
    spec = importlib.util.spec_from_file_location("make_sample_traces", REPO_ROOT / "data" / "traces" /
                                                  "make_sample_traces.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def opaque(chunk_id: str) -> str:
    return "ext-" + hashlib.sha256(chunk_id.encode()).hexdigest()[:10]


def records() -> list[dict]:
    return [json.loads(line) for line in TEAM_LOG.read_text(encoding="utf-8").splitlines() if line.strip()]


def with_ids(rec: dict, id_of) -> dict:
    out = dict(rec)
    out["retrieved"] = [{**h, "chunk_id": id_of(h["chunk_id"])} for h in rec["retrieved"]]
    out["citations"] = [id_of(c) for c in rec.get("citations") or []]
    return out


def with_texts(rec: dict, texts: dict[str, str], n: int) -> dict:
    """Hits as passage text only; every other hit written as a reader would copy it (case, spaces changed)."""
    out = dict(rec)
    out["retrieved"] = [{"text": texts[h["chunk_id"]] if (n + i) % 2 else "  " + texts[h["chunk_id"]].upper(),
                         **{k: h[k] for k in ("score", "rank") if k in h}} for i, h in enumerate(rec["retrieved"])]
    return out


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


PYTHON_SYSTEM = '''
import json
from pathlib import Path

_BY_ID = {}
for line in (Path(__file__).parent / "prefixed.jsonl").read_text(encoding="utf-8").splitlines():
    if line.strip():
        rec = json.loads(line)
        _BY_ID[rec["question_id"]] = rec


def answer(question_id, question, user_groups):
    rec = dict(_BY_ID[question_id])
    if rec["decision"] == "error":
        raise TimeoutError(rec["error"])
    return rec
'''


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """Every kind over the sample, each with its own ids; the configuration lives in its own folder."""
    tmp = tmp_path_factory.mktemp("id_mapping")
    cfg0 = load_config(SAMPLE_DIR / "config.yaml", environ={})
    snapshot, _ = build_snapshot(cfg0)
    texts = dict(zip(snapshot["chunk_id"], snapshot["text"]))
    recs = records()
    write_jsonl(tmp / "prefixed.jsonl", [with_ids(r, lambda c: PREFIX + c) for r in recs])
    write_jsonl(tmp / "opaque.jsonl", [with_ids(r, opaque) for r in recs])
    write_jsonl(tmp / "texts.jsonl", [with_texts(r, texts, n) for n, r in enumerate(recs)])
    write_jsonl(tmp / "ids.jsonl", [{"document_id": opaque(c), "chunk_id": c} for c in texts])
    (tmp / "team_system.py").write_text(PYTHON_SYSTEM, encoding="utf-8")  # found through the config's folder
    script = _load_traces_script()
    questions = {json.loads(x)["question_id"]: json.loads(x)["question"]
                 for x in (SAMPLE_DIR / "golden.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()}
    script.write_otlp_json(script.trace_records(recs, questions, texts, id_of=opaque), tmp / "opaque.otlp.jsonl")
    script.write_otlp_json(script.trace_records(recs, questions, texts, with_ids=False), tmp / "texts.otlp.jsonl")

    by_id = {r["question_id"]: with_ids(r, lambda c: PREFIX + c) for r in recs}

    def http_answer(qid, question, groups):
        return by_id[qid]

    traced = {"question_id_attribute": "metadata.question_id", "decision_attribute": "metadata.decision"}
    with RagFaultServer(http_answer, faults={"q24": "500"}) as server:
        systems = [
            {"name": "team_rag", "kind": "logged", "path": str(TEAM_LOG)},
            {"name": "logged_prefix", "kind": "logged", "path": "prefixed.jsonl",
             "chunk_map": {"strip_prefix": PREFIX}},
            {"name": "logged_file", "kind": "logged", "path": "opaque.jsonl", "chunk_map": "ids.jsonl"},
            {"name": "logged_text", "kind": "logged", "path": "texts.jsonl"},
            {"name": "python_prefix", "kind": "python", "callable": "team_system:answer",
             "chunk_map": {"strip_prefix": PREFIX}},
            {"name": "http_prefix", "kind": "http", "url": server.url, "max_retries": 0,
             "chunk_map": {"strip_prefix": PREFIX}},
            {"name": "traces_file", "kind": "traces", "path": "opaque.otlp.jsonl", "chunk_map": "ids.jsonl", **traced},
            {"name": "traces_text", "kind": "traces", "path": "texts.otlp.jsonl", **traced},
        ]
        raw = {"corpus": {"source": "documents_dir", "path": str(SAMPLE_DIR / "corpus")},
               "golden": {"path": str(SAMPLE_DIR / "golden.jsonl")}, "systems": systems}
        (tmp / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
        assert "team_system" not in sys.modules
        cfg = load_config(tmp / "config.yaml", environ={})
        snapshot, version = build_snapshot(cfg)
        golden = build_golden(cfg, snapshot)
        info: dict = {}
        runs = build_runs(cfg, snapshot, golden, version, info=info)
    qm, _ = build_question_metrics(cfg, snapshot, golden, runs, tables.empty("judge_labels"),
                                   tables.empty("answer_judgements"))
    return {"runs": runs, "qm": qm.filter(pl.col("metric") != "latency_ms"), "info": info, "tmp": tmp}


def _rows(qm: pl.DataFrame, system: str) -> list[tuple]:
    return sorted(qm.filter(pl.col("system") == system).select(
        "question_id", "metric", "k", "level", "value", "numerator", "denominator", "status").rows(),
        key=lambda r: tuple("" if x is None else str(x) for x in r))


@pytest.mark.parametrize("system", ["logged_prefix", "logged_file", "logged_text", "python_prefix", "http_prefix",
                                    "traces_file", "traces_text"])
def test_every_kind_with_its_own_ids_has_the_logs_metrics(kinds, system):
    want = _rows(kinds["qm"], "team_rag")
    assert len(want) > 1000
    assert _rows(kinds["qm"], system) == want
    runs = kinds["runs"]
    same = runs.filter(pl.col("system") == system).sort("question_id")["retrieved"].to_list()
    assert same == runs.filter(pl.col("system") == "team_rag").sort("question_id")["retrieved"].to_list() or \
        system.startswith("traces"), system  # traces keep scores and ranks; the ids are what is compared here
    ids = [[h["chunk_id"] for h in r] for r in same]
    assert ids == [[h["chunk_id"] for h in r] for r in
                   runs.filter(pl.col("system") == "team_rag").sort("question_id")["retrieved"].to_list()]


def test_what_the_mapping_did_is_counted(kinds):
    info = kinds["info"]
    n_hits = sum(len(r["retrieved"]) for r in records())
    assert info["logged_prefix"]["id_mapping"] == {"by_prefix": n_hits + sum(len(r.get("citations") or [])
                                                                              for r in records())}
    assert info["logged_file"]["id_mapping"]["by_file"] > n_hits
    text = info["logged_text"]["id_mapping"]
    assert text["text_exact"] + text["text_normalised"] == n_hits and text["text_normalised"] > 0
    assert "unmatched_texts" not in text
    assert info["traces_text"]["id_mapping"]["text_exact"] == n_hits
    # the python module was imported from the configuration's folder
    assert Path(sys.modules["team_system"].__file__).parent == kinds["tmp"]
    errors = kinds["runs"].filter((pl.col("system") == "http_prefix") & (pl.col("decision") == "error"))
    assert errors["question_id"].to_list() == ["q24"] and "HTTP 500" in errors["error"][0]


def test_a_passage_that_matches_no_chunk_is_left_out_counted_and_listed(tmp_path):
    cfg = load_config(SAMPLE_DIR / "config.yaml", environ={})
    snapshot, version = build_snapshot(cfg)
    texts = dict(zip(snapshot["chunk_id"], snapshot["text"]))
    rec = records()[0]
    hits = [{"text": texts[h["chunk_id"]], "score": h["score"]} for h in rec["retrieved"]]
    hits.insert(1, {"text": "A passage from another index.", "score": 0.7})
    path = write_jsonl(tmp_path / "log.jsonl", [{**rec, "retrieved": hits}])
    mapper = IdMapper.for_system({"name": "s"}, snapshot)
    from rag_eval_pipeline.core.sources.run_logs import load_run_log

    runs = load_run_log(path, "s", version, "gv", known_chunks=mapper.known, ids=mapper)
    got = runs["retrieved"][0].to_list()
    assert [h["chunk_id"] for h in got] == [h["chunk_id"] for h in rec["retrieved"]]
    assert [h["rank"] for h in got] == [1, 3, 4, 5, 6]  # list places; the unmatched one keeps its place empty
    stats = mapper.stats()
    assert stats["unmatched_texts"] == 1
    assert stats["unmatched_examples"] == [{"question_id": rec["question_id"], "position": 2,
                                            "text": "A passage from another index."}]


def test_doc_ids_map_to_the_first_chunk_and_say_chunk_level_means_nothing(tmp_path):
    cfg = load_config(SAMPLE_DIR / "config.yaml", environ={})
    snapshot, _ = build_snapshot(cfg)
    mapper = IdMapper.for_system({"name": "s", "chunk_map": {"doc_ids": True, "strip_prefix": "doc:"}}, snapshot)
    assert mapper.chunk("doc:devoluciones-a1") == "devoluciones-a1#0"
    assert mapper.chunk("devoluciones-a1") == "devoluciones-a1#0"
    assert mapper.chunk("doc:nowhere") == "nowhere" and "not a doc_id" in mapper.describe_unknown("doc:nowhere")
    one = IdMapper.for_system({"name": "s"}, snapshot)
    assert "has 6 chunks" in one.describe_unknown("returns-a1-en")


@pytest.mark.parametrize("value, message", [
    ({"strip_prefx": "x"}, r"unknown key\(s\) \['strip_prefx'\] in systems\[0\].chunk_map"),
    ("missing.jsonl", r"systems\[0\].chunk_map.file .*missing.jsonl not found; expected a JSONL or Parquet file"),
    ({"doc_ids": "yes"}, r"systems\[0\].chunk_map.doc_ids must be true or false"),
    ({}, r"systems\[0\].chunk_map sets nothing"),
])
def test_a_bad_chunk_map_is_a_configuration_error_naming_the_system(tmp_path, value, message):
    raw = {"corpus": {"source": "documents_dir", "path": str(SAMPLE_DIR / "corpus")},
           "golden": {"path": str(SAMPLE_DIR / "golden.jsonl")},
           "systems": [{"name": "team", "kind": "logged", "path": str(TEAM_LOG), "chunk_map": value}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(tmp_path / "config.yaml")
    assert "systems[0] (team, kind logged)" in str(info.value) and ", line " in str(info.value)


def test_an_id_the_map_does_not_know_names_file_line_and_field(tmp_path):
    recs = records()
    recs[1] = with_ids(recs[1], lambda c: "zz:" + c)
    path = write_jsonl(tmp_path / "log.jsonl", [with_ids(r, lambda c: PREFIX + c) if i != 1 else r
                                                for i, r in enumerate(recs)])
    raw = {"corpus": {"source": "documents_dir", "path": str(SAMPLE_DIR / "corpus")},
           "golden": {"path": str(SAMPLE_DIR / "golden.jsonl")},
           "systems": [{"name": "team", "kind": "logged", "path": str(path), "chunk_map": {"strip_prefix": PREFIX}}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    cfg = load_config(tmp_path / "config.yaml")
    snapshot, version = build_snapshot(cfg)
    with pytest.raises(InputError) as info:
        build_runs(cfg, snapshot, build_golden(cfg, snapshot), version)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, "retrieved[0].chunk_id")
    assert "'zz:" in str(info.value) and "names no chunk of the corpus snapshot" in str(info.value)


def test_normalised_passages():
    assert normalise_passage("  «Hola,\n  Mundo»  ") == normalise_passage("hola, mundo") == "hola, mundo"


def test_the_shipped_traces_file_is_what_its_script_writes_and_reads_as_the_log(tmp_path):
    """``data/traces/team_rag.otlp.jsonl`` is reproducible from its script, and ``data/configs/traces.yaml``
    gives the traces system the log's metrics."""
    script = _load_traces_script()
    records_, questions, texts = script.sample_inputs()
    again = script.write_otlp_json(script.trace_records(records_, questions, texts), tmp_path / "again.jsonl")
    assert again.read_bytes() == (REPO_ROOT / "data" / "traces" / "team_rag.otlp.jsonl").read_bytes()
    cfg = load_config(REPO_ROOT / "data" / "configs" / "traces.yaml", environ={})
    snapshot, version = build_snapshot(cfg)
    golden = build_golden(cfg, snapshot)
    info: dict = {}
    runs = build_runs(cfg, snapshot, golden, version, info=info)
    qm, _ = build_question_metrics(cfg, snapshot, golden, runs, tables.empty("judge_labels"),
                                   tables.empty("answer_judgements"))
    qm = qm.filter(pl.col("metric") != "latency_ms")
    assert _rows(qm, "team_rag_traces") == _rows(qm, "team_rag")
    assert info["team_rag_traces"]["matched_by_attribute"] == 52
    assert info["team_rag_traces"]["id_mapping"]["by_prefix"] == sum(len(r["retrieved"]) for r in records_)
