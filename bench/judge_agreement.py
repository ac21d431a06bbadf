"""Agreement of a model judge behind any OpenAI-compatible endpoint with people (a script, not a test).

Measures Cohen's kappa of :class:`~rag_eval_pipeline.core.judges.openai_compatible.OpenAICompatibleJudge`
(temperature 0, the package's versioned prompts) at response level on two human-labelled sets:

1. BEGIN WoW dev (``begin_wow/begin_dev_wow.tsv`` under ``RAG_EVAL_DATASETS`` or
   ``../shared/datasets``; Dziri et al., arXiv 2105.00071), scored exactly as
   ``bench/begin_calibration.py`` scores the embedded judge (Generic rows dropped and counted; judge
   "attributable" iff every claim is SUPPORTED);
2. the embedded sample's 34 hand labels (``data/sample/human_labels.jsonl``) of the logged system's
   answers, with the sample configuration's own mapping (every claim SUPPORTED → attributable; an
   answer the judge gives no claim label is not attributable).

Any endpoint works: a local llama.cpp server (``python -m llama_cpp.server --model M.gguf --host
127.0.0.1 --port 8080``), Ollama (``--base-url http://127.0.0.1:11434/v1``), vLLM (``vllm serve
MODEL`` then ``--base-url http://127.0.0.1:8000/v1``) or a hosted API (key in the environment
variable named by ``--api-key-env``). ``--limit N`` judges only the first N rows of each set (a
smoke run); its kappa says nothing about the judge. Judge errors are counted, never hidden: they
are printed, and an errored answer counts as not attributable.

Usage: python bench/judge_agreement.py --base-url URL --model NAME [--api-key-env VAR]
       [--limit N] [--concurrency C] [--timeout-s S] [--datasets DIR]
The last line is "kappa BEGIN <k> sample <k>".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from begin_calibration import BeginFileError, fmt, load_begin, print_report, score  # noqa: E402

from rag_eval_pipeline.core.judging import judge_runs  # noqa: E402
from rag_eval_pipeline.core.metrics.agreement import accuracy, cohen_kappa  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LABELS = ["attributable", "not_attributable"]


def sample_agreement(judge, limit: int | None = None) -> dict:
    """Kappa of ``judge`` on the sample's hand labels (response level). Output: dict with n,
    kappa (None when undefined), agreement, judge_errors, statuses."""
    from rag_eval_pipeline.core import pipeline
    from rag_eval_pipeline.core.config import load_config

    cfg = load_config(REPO / "data" / "sample" / "config.yaml")
    snapshot, version = pipeline.build_snapshot(cfg)
    golden = pipeline.build_golden(cfg, snapshot)
    human_path = cfg.calibration.human_labels
    human = [json.loads(line) for line in human_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit:
        human = human[:limit]
    systems = sorted({h["system"] for h in human})
    runs = pipeline.build_runs(cfg, snapshot, golden, version, systems=systems)
    keys = {(h["system"], h["question_id"]) for h in human}
    runs = runs.filter(pl.struct("system", "question_id").map_elements(
        lambda s: (s["system"], s["question_id"]) in keys, return_dtype=pl.Boolean))
    labels, answers = judge_runs(runs, snapshot, judge, questions=golden.select("question_id", "question"),
                                 abstention_phrases=cfg.judge.abstention_phrases)
    sup: dict[tuple[str, str], bool] = {}
    for s, q, v in labels.select("system", "question_id", "verdict").iter_rows():
        sup[(s, q)] = sup.get((s, q), True) and v == "SUPPORTED"
    status = {(s, q): st for s, q, st in answers.select("system", "question_id", "status").iter_rows()}
    people = [h["verdict"] for h in human]
    judged = ["attributable" if status.get((h["system"], h["question_id"])) == "judged"
              and sup.get((h["system"], h["question_id"]), False) else "not_attributable" for h in human]
    return {"n": len(human), "kappa": cohen_kappa(people, judged, LABELS), "agreement": accuracy(people, judged),
            "judge_errors": int((answers["status"] == "judge_error").sum()),
            "statuses": answers.group_by("status").len().sort("status").rows()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key-env", default="RAG_EVAL_JUDGE_API_KEY",
                    help="environment variable holding the API key (default RAG_EVAL_JUDGE_API_KEY; may be unset)")
    ap.add_argument("--limit", type=int, default=None, help="judge only the first N rows of each set")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--timeout-s", type=float, default=120.0)
    default = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    ap.add_argument("--datasets", type=Path, default=default)
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        print(f"--limit must be >= 1, got {args.limit}", file=sys.stderr)
        return 2
    from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge

    judge = OpenAICompatibleJudge(base_url=args.base_url, model=args.model,
                                  api_key=os.environ.get(args.api_key_env) or "none",
                                  timeout_s=args.timeout_s, concurrency=args.concurrency)
    try:
        rows, generic = load_begin(args.datasets / "begin_wow" / "begin_dev_wow.tsv")
    except BeginFileError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.limit:
        rows = rows[: args.limit]
    print(f"judge {judge.name} at {args.base_url}, model {args.model}"
          + (f"; --limit {args.limit}: a smoke run, its kappa means nothing" if args.limit else ""))
    print("== BEGIN WoW dev ==")
    begin = score(rows, judge)
    print_report(begin, generic)
    print(f"(judge_model {judge.model}, prompt_sha256 {judge.prompt_sha256})")
    print("== sample hand labels ==")
    sample = sample_agreement(judge, args.limit)
    print(f"n = {sample['n']}, agreement {sample['agreement']:.3f}, Cohen's kappa {fmt(sample['kappa'])}, "
          f"judge errors {sample['judge_errors']}, statuses {sample['statuses']}")
    print(f"kappa BEGIN {fmt(begin['kappa'])} sample {fmt(sample['kappa'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
