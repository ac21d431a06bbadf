"""A new user's own system, timed: ``init``, ``check`` and ``run`` on a folder that is not the sample, and the
mistakes a new user makes (a typo inside a system, a bad golden line, a run log in unknown ids).

Issue #21's target: from a fresh clone to a first evaluation of one's own (toy) system in under 15 minutes.
The install (``pip install -r requirements.lock -e .``) needs the network and is not timed here; what is
timed is every command the manual's "Evaluate your own system" page asks for, each in a fresh process
(imports and Dagster start-up included), on ``rag_eval_pipeline_tests/fixtures/own_system/`` (the team's
own chunk ids, relevance judged per document, a log in other ids with one failed run).

For each mistake: exit status, wall seconds, the lines on stderr, and the Dagster runs recorded in a fresh
``DAGSTER_HOME`` (goal, as in the issue: one line, exit 2 for configuration / 1 for data, no run recorded).
Prints one line per command and the total, with the load average (2 shared cores: read seconds with it).
Usage: python bench/bench_own_system.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home  # noqa: E402

OWN = ROOT / "rag_eval_pipeline_tests" / "fixtures" / "own_system"
BUDGET_S = 15 * 60


def cli(args: list[str], env: dict) -> tuple[int, float, str, str]:
    """(exit status, wall seconds, stdout, stderr) of ``python -m rag_eval_pipeline.cli ARGS``."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    return proc.returncode, time.perf_counter() - start, proc.stdout, proc.stderr


def runs_recorded(home: Path) -> int:
    """Dagster runs recorded in ``home`` (its run storage, read through Dagster's own API)."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return instance.get_runs_count()


def mistakes(folder: Path) -> dict[str, Path]:
    """One configuration per mistake, each in its own copy of ``folder``."""
    out = {}

    def copy(name: str) -> Path:
        dst = folder.parent / name
        shutil.copytree(folder, dst)
        return dst

    d = copy("typo_retriever")  # a reference system whose retriever key is misspelt
    (d / "config.yaml").write_text((d / "config.yaml").read_text(encoding="utf-8").replace(
        "systems:\n", "systems:\n  - name: bm25\n    kind: reference\n    retriver: {type: bm25, k: 10}\n", 1),
        encoding="utf-8")
    out["typo inside a system (retriver:)"] = d
    d = copy("typo_language")
    (d / "config.yaml").write_text((d / "config.yaml").read_text(encoding="utf-8").replace(
        "systems:\n", "systems:\n  - name: bm25\n    kind: reference\n    retriever: {type: bm25, langauge: english}\n",
        1), encoding="utf-8")
    out["typo inside a system (langauge:)"] = d
    d = copy("bad_golden")
    lines = (d / "golden.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4].replace('"answerability": "answerable"', '"answerability": "answerble"')
    (d / "golden.jsonl").write_text("".join(lines), encoding="utf-8")
    out["bad golden line (answerble)"] = d
    d = copy("bad_log")
    (d / "team_log.jsonl").write_text((d / "team_log.jsonl").read_text(encoding="utf-8").replace(
        "kb/pedalo-kb-0006", "kb/pedalo-kb-9999", 1), encoding="utf-8")
    out["run log naming an unknown chunk"] = d
    return out


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench_own_") as tmp:
        tmp = Path(tmp)
        folder = tmp / "pedalo"
        shutil.copytree(OWN, folder)
        for extra in ("README.md",):
            (folder / extra).unlink(missing_ok=True)
        env = cli_env(dagster_home(tmp / "home"), RAG_EVAL_OUTPUT_DIR=str(tmp / "outputs"))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        config = str(folder / "config.yaml")
        print(f"own system: {folder.name} (chunks {sum(1 for _ in open(folder / 'chunks.jsonl'))}, "
              f"golden {sum(1 for _ in open(folder / 'golden.jsonl'))} questions judged per document)")
        total, ok = 0.0, True
        for args in (["init", str(folder)], ["check", "--config", config], ["estimate", "--config", config],
                     ["run", "--config", config]):
            rc, secs, out, err = cli(args, env)
            total += secs
            ok &= rc == 0
            print(f"  rag-eval {args[0]:<9} exit {rc}  {secs:6.1f} s")
            if rc != 0:
                print((out + err)[-2000:])
        print(f"  commands total {total:.1f} s of the {BUDGET_S} s budget ({total / BUDGET_S:.1%}); "
              f"{'every command exit 0' if ok else 'A COMMAND FAILED'}")

        print("mistakes (fresh DAGSTER_HOME each; goal: one line, exit 2 configuration / 1 data, no Dagster run):")
        for i, (what, d) in enumerate(mistakes(folder).items()):
            for command in ("check", "run"):
                home = dagster_home(tmp / f"home_{i}_{command}")
                env_i = {**env, "DAGSTER_HOME": str(home)}
                rc, secs, out, err = cli([command, "--config", str(d / "config.yaml")], env_i)
                lines = [x for x in err.splitlines() if x.strip()]
                print(f"  {what:<34} {command:<5} exit {rc}  {secs:5.1f} s  stderr lines {len(lines)}  "
                      f"dagster runs {runs_recorded(home)}")
                if command == "run" and lines:
                    print(f"    {lines[0][:200]}")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"on {os.cpu_count()} cores")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
