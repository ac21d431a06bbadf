"""``judge.type: python``: a team's own judge, a function ``package.module:function`` called per claim.

The answer is split into claims by the pipeline (``checkable_claims``, as the embedded judge does);
the function is called once per claim as ``function(claim, passages)`` (the claim text and the
retrieved chunk texts in rank order) and returns a mapping with ``verdict`` (``SUPPORTED``,
``CONTRADICTED`` or ``NOT_MENTIONED``), ``quote`` (the passage text it relies on, or None) and,
optionally, ``justification``. Like every judge's, its quote is then checked by code
(``core/judging.py``): a SUPPORTED verdict whose quote is not literally in the retrieved text is
downgraded. A call that raises, or returns anything else, is a ``JUDGE_ERROR`` label with the reason,
never a score. ``model`` is the target; ``prompt_sha256`` the sha256 of the function's source (of the
target when the source cannot be read), so a calibration goes stale when the function changes.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rag_eval_pipeline.core.config_sections import JudgeConfig
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict, holistic_label
from rag_eval_pipeline.core.judges.registry import JudgeConfigError, JudgeType, judge_env, register
from rag_eval_pipeline.core.section_checks import check_callable_target
from rag_eval_pipeline.core.sections import key

_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")



@dataclass(frozen=True)
class PythonJudgeSettings:
    """The key of the python judge: the function it calls."""

    callable: str | None = key(None, check=check_callable_target, env="RAG_EVAL_JUDGE_CALLABLE",
                               doc="function(claim, passages) -> {verdict, quote, justification}")


class PythonJudge:
    """The ``Judge`` of a function ``fn(claim, passages) -> {"verdict", "quote", "justification"}``
    (module docstring). ``fn`` replaces the import of ``target`` (tests)."""

    name = "python"

    def __init__(self, target: str, fn: Callable | None = None):
        from rag_eval_pipeline.core.systems.python_callable import load_callable

        try:
            self.fn = fn or load_callable(target, "judge")
        except ConfigError as exc:
            raise JudgeConfigError(str(exc).replace("system 'judge'", "judge.callable")) from None
        self.model = target
        try:
            source = inspect.getsource(self.fn)
        except (OSError, TypeError):
            source = target
        self.prompt_sha256 = hashlib.sha256(source.encode("utf-8")).hexdigest()

    def _one(self, n: int, claim: str, contexts: list[str]) -> ClaimVerdict:
        cid = f"c{n}"
        try:
            got = self.fn(claim, list(contexts))
        except Exception as exc:  # noqa: BLE001 - the team's judge failed on this claim: a JUDGE_ERROR label
            return ClaimVerdict(cid, claim, "JUDGE_ERROR", None, False, "", f"the judge raised {type(exc).__name__}: "
                                                                               f"{str(exc)[:200]}")
        verdict = got.get("verdict") if isinstance(got, Mapping) else None
        quote = got.get("quote") if isinstance(got, Mapping) else None
        if verdict not in _VERDICTS or not (quote is None or isinstance(quote, str)):
            return ClaimVerdict(cid, claim, "JUDGE_ERROR", None, False, "",
                                f"the judge returned {str(got)[:120]!r}; expected a mapping with verdict one of "
                                f"{list(_VERDICTS)} and quote a string or null")
        from rag_eval_pipeline.core.judges.quotes import quote_in_context

        justification = str(got.get("justification") or "")[:2000]
        return ClaimVerdict(cid, claim, verdict, quote, quote_in_context(quote, contexts), justification)

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement:
        """One verdict per claim of ``answer`` (status "no_claims" / "no_retrieval" when there is nothing
        to judge, "judge_error" when every call failed). Never raises for string inputs."""
        from rag_eval_pipeline.core.judges.rule_based import checkable_claims

        claims = checkable_claims(answer)
        if not claims:
            return AnswerJudgement("no_claims", [], None)
        if not any((c or "").strip() for c in contexts):
            return AnswerJudgement("no_retrieval", [], None)
        verdicts = [self._one(n, c, contexts) for n, c in enumerate(claims, start=1)]
        if all(v.verdict == "JUDGE_ERROR" for v in verdicts):
            return AnswerJudgement("judge_error", verdicts, None)
        return AnswerJudgement("judged", verdicts, holistic_label([v.verdict for v in verdicts]))


    def judge_support(self, request):
        """:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport`: the function called once per item
        with the item and the request's passages alone (citation support: the cited chunks; nugget
        coverage: the answer). SUPPORTED stays, CONTRADICTED / NOT_MENTIONED read as NOT_SUPPORTED, and
        a function that answers PARTIAL or NOT_SUPPORTED is taken at its word; the caller checks the
        quote. Never raises."""
        from rag_eval_pipeline.core.judges.base import SupportVerdict

        ids = list(request.item_ids) or [str(i) for i in range(1, len(request.items) + 1)]
        out = []
        for item_id, item in zip(ids, request.items):
            try:
                got = self.fn(item, list(request.passages))
            except Exception as exc:  # noqa: BLE001 - one failing item is a JUDGE_ERROR, never a score
                out.append(SupportVerdict(item_id, "JUDGE_ERROR", None, "", f"the judge raised {type(exc).__name__}: "
                                                                            f"{str(exc)[:200]}"))
                continue
            verdict = got.get("verdict") if isinstance(got, Mapping) else None
            quote = got.get("quote") if isinstance(got, Mapping) else None
            level = ({"CONTRADICTED": "NOT_SUPPORTED", "NOT_MENTIONED": "NOT_SUPPORTED"}.get(verdict, verdict)
                     if isinstance(verdict, str) else None)
            if level not in ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED") or not (quote is None or isinstance(quote, str)):
                out.append(SupportVerdict(item_id, "JUDGE_ERROR", None, "", f"the judge returned {str(got)[:120]!r}; "
                                          "expected a mapping with a verdict and quote a string or null"))
                continue
            out.append(SupportVerdict(item_id, level, quote, str(got.get("justification") or "")[:2000]))
        return out

    def support_prompt_sha256(self, family: str) -> str:
        """The function's source hash (the same decision for every family)."""
        return self.prompt_sha256


def check(config: JudgeConfig, origin: str, source: str = "the configuration") -> None:
    """The python judge needs its function."""
    if not config.options.callable:
        raise JudgeConfigError(f"{origin} needs {judge_env()['callable']} (package.module:function) or "
                               f"judge.callable in {source}")


def build(config: JudgeConfig, api_key: str | None) -> PythonJudge:
    """The judge of the configured function. JudgeConfigError when it is unset or does not import."""
    check(config, f"judge type {config.type}")
    return PythonJudge(config.options.callable)


JUDGE = register(JudgeType(
    name="python", section=PythonJudgeSettings, build=build, check=check, order=40,
    doc="Your own judge: a function package.module:function called once per claim with the claim and the "
        "retrieved passages, returning a verdict (SUPPORTED / CONTRADICTED / NOT_MENTIONED) and the quote it "
        "relies on. The pipeline splits the claims, checks every quote in code and records a failed call as "
        "JUDGE_ERROR with its reason.",
))
