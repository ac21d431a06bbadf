"""A model-based judge for any OpenAI-compatible chat-completions endpoint (llama.cpp, vLLM, OpenAI...).

Procedure (Ragas' *faithfulness*): step 1 asks the model to decompose the answer into atomic claims
(``claim_decomposition``); step 2 asks it to verify the claims against the retrieved context, each
as SUPPORTED / CONTRADICTED / NOT_MENTIONED with a literal quote and the justification written
before the label (``claim_verification``). Partial support is NOT_MENTIONED; outside knowledge is
forbidden. The quote is checked here by code
(:func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`, advisory ``quote_found``) and
again by :func:`rag_eval_pipeline.core.judging.judge_runs`, which downgrades an unverified SUPPORTED.

The parts: :mod:`~rag_eval_pipeline.core.judges.transport` (HTTP with a deadline, retries, backoff,
rate limit, secret scrubbing), :mod:`~rag_eval_pipeline.core.judges.prompt_files` (the versioned
prompt files), :mod:`~rag_eval_pipeline.core.judges.replies` (reply validation) and this module
(the judge: tasks and cost estimate), :mod:`~rag_eval_pipeline.core.judges.task_calls` (one call
through the cache) and :mod:`~rag_eval_pipeline.core.judges.many` (many answers at once, any judge).

:attr:`OpenAICompatibleJudge.prompt_sha256` (the value stored on every label) is the sha256 of the
concatenated bytes of, in this order: ``claim_decomposition.v1.txt``,
``claim_decomposition.v1.schema.json``, ``claim_verification.v1.txt``,
``claim_verification.v1.schema.json`` — the files :meth:`~OpenAICompatibleJudge.judge` uses.
Editing any of them changes it.

:meth:`~OpenAICompatibleJudge.judge` never raises for endpoint faults: it returns an AnswerJudgement
with status "judge_error" whose ClaimVerdicts are JUDGE_ERROR with ``error = "<reason>: <detail>"``
(reasons in the transport's docstring). The other methods (:meth:`~OpenAICompatibleJudge.holistic`,
...) raise :class:`JudgeCallError`.

Cache (optional :class:`~rag_eval_pipeline.core.judges.cache.JudgeCache`): every call goes through
:class:`~rag_eval_pipeline.core.judges.task_calls.TaskCalls` (keys, single flight, what a hit holds).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rag_eval_pipeline.core.judges.base import (
    AnswerJudgement,
    ClaimVerdict,
    SupportRequest,
    SupportVerdict,
    holistic_label,
)
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.claims import split_claims
from rag_eval_pipeline.core.judges.prompt_files import (
    ALL_TASKS,
    JUDGE_TASKS,
    PROMPT_VERSION,
    SUPPORT_TASKS,
    Prompt,
    load_prompt,
    render_chunks,
    render_claims,
    render_inputs,
)
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.judges.replies import (
    CLAIM_VERDICTS,
    CORRECTNESS_STATUSES,
    validate_context_relevance,
    validate_correctness,
    validate_decomposition,
    validate_holistic,
    validate_questions,
    validate_relevance,
    validate_support,
    validate_verification,
)
from rag_eval_pipeline.core.judges.task_calls import TaskCalls
from rag_eval_pipeline.core.judges.transport import (
    ChatTransport,
    JudgeCallError,
    TokenBucket,
    backoff_delay,
    scrub_secret,
    transport_settings,
)

__all__ = [
    "OpenAICompatibleJudge",
    "JudgeCallError",
    "Prompt",
    "load_prompt",
    "TokenBucket",
    "backoff_delay",
    "scrub_secret",
    "JUDGE_NAME",
    "PROMPT_VERSION",
    "JUDGE_TASKS",
    "CLAIM_VERDICTS",
    "CORRECTNESS_STATUSES",
    "ALL_TASKS",
]

log = logging.getLogger(__name__)

JUDGE_NAME = "openai_compatible"


# ---------------------------------------------------------------------------------------------
# the judge


class OpenAICompatibleJudge:
    """Claim-level faithfulness judge (and helper metrics) over an OpenAI-compatible endpoint.

    Constructor: ``base_url`` (e.g. "http://127.0.0.1:8080/v1"), ``model`` (requested model name),
    ``api_key`` (str; kept by the client only, never logged or returned), ``timeout_s`` (> 0 s: the
    deadline of each request, connect to last byte), ``max_retries`` (>= 0 extra requests per call),
    ``backoff_s`` (>= 0 s, first retry wait) — each None = the default (30, 3, 0.5), and the
    environment variables ``RAG_EVAL_JUDGE_TIMEOUT_S``, ``RAG_EVAL_JUDGE_MAX_RETRIES``,
    ``RAG_EVAL_JUDGE_BACKOFF_S`` (read from ``environ``, default ``os.environ``) override them;
    ``concurrency`` (>= 1: most requests in flight at once from this judge; also the default of
    :func:`judge_many`), ``rate_limit_per_s`` (None or > 0 requests/s, token bucket), ``cache`` (a
    :class:`JudgeCache` or None), ``use_json_schema`` (start at the json_schema response format;
    False starts at plain json_object), ``temperature`` (>= 0), ``max_tokens`` (reply limit per
    call), ``claims_per_call`` (claims verified per request), ``max_claims`` (more claims in one
    answer is an out_of_range reply). Raises ValueError for values out of range, ConfigError for a
    bad environment variable.

    Protocol attributes: ``name`` = "openai_compatible"; ``model`` = the exact version the server
    reported in its last reply's ``model`` field (the requested name until a reply or cache hit
    arrives; ``models_seen`` lists every version seen); ``prompt_sha256`` (module docstring).
    ``stats`` is a snapshot dict: the transport's counters (``calls``, ``prompt_tokens``,
    ``completion_tokens``, ``seconds``, ``errors``, ``failures``, ``retries``, ``response_format``)
    and settings (``timeout_s``, ``max_retries``, ``backoff_s``, ``settings_source``), plus
    ``cache_hits``, ``cache_writes``, ``flight_waits`` (calls answered by an identical call in
    flight elsewhere, also counted as hits) and ``failed_waits`` (identical calls given the failure of one
    that already spent its ``1 + max_retries`` attempts, not sent again). ``transport`` is the
    :class:`~rag_eval_pipeline.core.judges.transport.ChatTransport`.
    """

    name = JUDGE_NAME
    #: ``judge()`` takes ``repeat=`` (callers such as ``judge_runs`` should pass it when this is True,
    #: so that repeat 1, 2, ... are fresh judgements instead of cache hits of repeat 0).
    accepts_repeat = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str,
        timeout_s: float | None = None,
        max_retries: int | None = None,
        backoff_s: float | None = None,
        concurrency: int = 4,
        rate_limit_per_s: float | None = None,
        cache: JudgeCache | None = None,
        use_json_schema: bool = True,
        temperature: float = 0,
        *,
        max_tokens: int | None = 1024,
        claims_per_call: int = 20,
        max_claims: int = 100,
        environ: Mapping[str, str] | None = None,
    ):
        if concurrency < 1 or temperature < 0:
            raise ValueError("concurrency must be >= 1 and temperature >= 0")
        if claims_per_call < 1 or max_claims < 1:
            raise ValueError("claims_per_call and max_claims must be >= 1")
        settings = transport_settings(timeout_s, max_retries, backoff_s, environ)
        self.transport = ChatTransport(base_url, api_key, settings, concurrency=concurrency,
                                       rate_limit_per_s=rate_limit_per_s, use_json_schema=use_json_schema)
        self.base_url = self.transport.base_url
        self.requested_model = str(model)
        self.timeout_s, self.max_retries, self.backoff_s = settings.timeout_s, settings.max_retries, settings.backoff_s
        self.concurrency = int(concurrency)
        self.rate_limit_per_s = rate_limit_per_s
        self.cache = cache
        self.temperature, self.max_tokens = float(temperature), max_tokens
        self.claims_per_call, self.max_claims = int(claims_per_call), int(max_claims)
        self._prompts = {t: load_prompt(t) for t in ALL_TASKS}
        self.prompt_sha256 = hashlib.sha256(b"".join(self._prompts[t].raw for t in JUDGE_TASKS)).hexdigest()
        self._calls = TaskCalls(self.transport, self.requested_model, cache, self.temperature, self.max_tokens)

    # -- identity -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"OpenAICompatibleJudge(base_url={self.base_url!r}, model={self.requested_model!r})"

    @property
    def model(self) -> str:
        """Exact model version from the last reply (or cache entry); the requested name before any."""
        return self._calls.model_seen or self.requested_model

    @property
    def models_seen(self) -> list[str]:
        """Every model version reported so far, sorted (more than one = the server changed model)."""
        return self._calls.models_seen

    @property
    def stats(self) -> dict[str, Any]:
        """A copy of the counters (see the class docstring)."""
        s = self.transport.stats
        s.update(self._calls.counts())
        return s

    def prompt_files(self) -> dict[str, str]:
        """Task → sha256 of its prompt + schema files, for every task this judge can run."""
        return {t: p.sha256 for t, p in self._prompts.items()}

    # -- faithfulness ---------------------------------------------------------------------------
    def judge(self, question: str, answer: str, contexts: list[str], *, repeat: int = 0) -> AnswerJudgement:
        """Judge one answer claim by claim (Ragas faithfulness = SUPPORTED / all claims).

        Inputs: the question (str, may be ""), the answer (str), the retrieved chunk texts in rank
        order, ``repeat`` (int >= 0; above 0 the cache is not read). Output: AnswerJudgement:
        "no_retrieval" (no non-blank context; zero calls), "no_claims" (blank answer: zero calls;
        or the model found no claim), "judged" (one ClaimVerdict per claim, ids "c1", "c2", ...,
        ``quote_found`` checked in code; ``holistic`` from the verdicts by
        :func:`~rag_eval_pipeline.core.judges.base.holistic_label`, no extra call), or
        "judge_error" (decomposition failed: one JUDGE_ERROR verdict "c0" for the whole answer; or
        every claim's verification failed). Claims whose verification failed while others
        succeeded are JUDGE_ERROR with the reason, status "judged". Never raises.
        """
        try:
            return self._judge(question, answer, contexts, repeat)
        except Exception as exc:  # noqa: BLE001 - a judge must never raise out of judge()
            reason = self.transport.scrub(f"internal_error: {type(exc).__name__}: {exc}")[:500]
            log.warning("judge failed unexpectedly: %s", reason)
            self.transport.count_failure("internal_error")
            return AnswerJudgement("judge_error", [ClaimVerdict(
                "c0", answer or "", "JUDGE_ERROR", None, False, "the judge failed", error=reason)])

    def _judge(self, question: str, answer: str, contexts: list[str], repeat: int) -> AnswerJudgement:
        ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
        if not any(c.strip() for c in ctx):
            return AnswerJudgement("no_retrieval")
        if not (answer and answer.strip()):
            return AnswerJudgement("no_claims")
        try:
            dec = self._call("claim_decomposition", {"question": question or "", "answer": answer}, repeat,
                             lambda o: validate_decomposition(o, self.max_claims, f"{question or ''} {answer}"))
        except JudgeCallError as e:
            return AnswerJudgement("judge_error", [ClaimVerdict(
                "c0", answer, "JUDGE_ERROR", None, False, "claim decomposition failed", error=str(e))])
        claims = dec["claims"]
        if not claims:
            return AnswerJudgement("no_claims")
        verdicts = self.verify_claims(claims, ctx, repeat=repeat)
        labels = [v.verdict for v in verdicts]
        status = "judge_error" if all(v == "JUDGE_ERROR" for v in labels) else "judged"
        return AnswerJudgement(status, verdicts, holistic_label(labels))

    def verify_claims(self, claims: Sequence[str], contexts: list[str], *, repeat: int = 0) -> list[ClaimVerdict]:
        """Step 2 alone: verify given claims against the retrieved texts (Ragas' second step; also usable for
        the golden set's reference claims or a rule-based split).

        Inputs: claims (non-empty strings), contexts (retrieved texts in rank order), ``repeat``.
        Output: one ClaimVerdict per claim, in order, ids "c1", "c2", ...: SUPPORTED /
        CONTRADICTED / NOT_MENTIONED with ``quote_found`` checked in code, or JUDGE_ERROR with
        ``error = "<reason>: <detail>"`` for the claims of a request that failed after retries
        (``claims_per_call`` claims per request). Raises ValueError when there is no claim or no
        non-blank context; never raises for server faults.
        """
        claims = [str(c) for c in claims]
        if not claims or not all(c.strip() for c in claims):
            raise ValueError("verify_claims needs at least one claim and no blank claim")
        ctx = self._need_contexts(contexts)
        verdicts: list[ClaimVerdict] = []
        for start in range(0, len(claims), self.claims_per_call):
            batch = claims[start:start + self.claims_per_call]
            try:
                out = self._call("claim_verification", {"contexts": ctx, "claims": batch}, repeat,
                                 functools.partial(validate_verification, n=len(batch)))
            except JudgeCallError as e:
                verdicts += [ClaimVerdict(f"c{start + i}", c, "JUDGE_ERROR", None, False,
                                          "claim verification failed", error=str(e))
                             for i, c in enumerate(batch, start=1)]
                continue
            for i, (c, v) in enumerate(zip(batch, out["verdicts"]), start=1):
                verdicts.append(ClaimVerdict(f"c{start + i}", c, v["verdict"], v["quote"],
                                             quote_in_context(v["quote"], ctx), v["justification"]))
        return verdicts

    # -- citation support and nugget coverage (JudgesSupport) ------------------------------------
    def judge_support(self, request: SupportRequest) -> list[SupportVerdict]:
        """Items against passages alone, one prompt per family (``citation_support.v1`` /
        ``nugget_coverage.v1``): SUPPORTED / PARTIAL / NOT_SUPPORTED with a literal quote (the caller
        checks it in code), ``claims_per_call`` items per request, cached like every call.

        Output: one SupportVerdict per item, in order; the items of a request that failed after
        retries are JUDGE_ERROR with ``error = "<reason>: <detail>"``; no non-blank passage gives
        NOT_SUPPORTED without a call. Raises ValueError for an unknown family or a blank item.
        """
        if request.family not in SUPPORT_TASKS:
            raise ValueError(f"unknown verdict family {request.family!r}; expected one of {list(SUPPORT_TASKS)}")
        items = [str(c) for c in request.items]
        ids = list(request.item_ids) or [str(i) for i in range(1, len(items) + 1)]
        if not all(c.strip() for c in items):
            raise ValueError("judge_support needs no blank item")
        passages = [p if isinstance(p, str) else "" for p in request.passages]
        if not any(p.strip() for p in passages):
            return [SupportVerdict(i, "NOT_SUPPORTED", None, "no passage text") for i in ids]
        out: list[SupportVerdict] = []
        for start in range(0, len(items), self.claims_per_call):
            batch = items[start:start + self.claims_per_call]
            batch_ids = ids[start:start + self.claims_per_call]
            try:
                reply = self._call(request.family, {"question": request.question or "", "contexts": passages,
                                                    "claims": batch}, request.repeat,
                                   functools.partial(validate_support, n=len(batch)))
            except JudgeCallError as e:
                out += [SupportVerdict(i, "JUDGE_ERROR", None, f"{request.family} call failed", error=str(e))
                        for i in batch_ids]
                continue
            out += [SupportVerdict(i, v["verdict"], v["quote"], v["justification"])
                    for i, v in zip(batch_ids, reply["verdicts"])]
        return out

    def support_prompt_sha256(self, family: str) -> str:
        """sha256 of the family's prompt and schema files (``prompts/<family>.v1.*``)."""
        return self._prompts[family].sha256

    def dry_run_estimate_support(self, requests: Iterable[SupportRequest]) -> dict:
        """What :meth:`judge_support` would cost over ``requests``, without calling the server:
        ``calls`` (one per ``claims_per_call`` items of a request with non-blank passages),
        ``prompt_tokens_est`` (ceil(characters of each rendered prompt / 4)), ``cached_calls``,
        ``items`` (requests), and ``by_family`` ({family: calls})."""
        calls = tokens = cached = n = 0
        by_family: dict[str, int] = {}
        for req in requests:
            n += 1
            passages = [p if isinstance(p, str) else "" for p in req.passages]
            if not any(p.strip() for p in passages) or not req.items:
                continue
            prompt = self._prompts[req.family]
            items = [str(c) for c in req.items]
            for s in range(0, len(items), self.claims_per_call):
                values = {"question": req.question or "", "contexts": passages,
                          "claims": items[s:s + self.claims_per_call]}
                calls += 1
                by_family[req.family] = by_family.get(req.family, 0) + 1
                tokens += math.ceil(len(render_inputs(prompt, values)) / 4)
                if self.cache is not None and self.cache.lookup(self.requested_model, prompt.sha256,
                                                                self._inputs(values)) is not None:
                    cached += 1
        return {"calls": calls, "prompt_tokens_est": tokens, "cached_calls": cached, "items": n,
                "by_family": by_family}

    # -- other metrics --------------------------------------------------------------------------
    def holistic(self, question: str, answer: str, contexts: list[str], *, repeat: int = 0) -> str:
        """Whole-answer faithfulness label, one call (an LLM-as-a-judge rubric, Zheng et al., NeurIPS 2023).

        Inputs: question, answer, non-empty retrieved texts. Output: "YES" | "PARTIAL" | "NO"
        (score with :data:`~rag_eval_pipeline.core.judges.base.HOLISTIC_SCORES`: 1 / 0.5 / 0).
        Unlike a parser that defaults to "NO", an unparsable reply is retried, never read as "NO". Raises
        ValueError for empty contexts, JudgeCallError when the call fails after retries.
        """
        ctx = self._need_contexts(contexts)
        out = self._call("holistic_faithfulness",
                         {"question": question or "", "answer": answer or "", "contexts": ctx}, repeat,
                         validate_holistic)
        return out["label"]

    def answer_relevance(self, question: str, answer: str, *, repeat: int = 0) -> int:
        """How well the answer addresses the question, 1..5 (ARES' answer relevance; the
        Ragas *answer_relevancy* idea without embeddings). Correctness is not judged.

        Output: int in 1..5. Raises JudgeCallError (including an out-of-range score after retries).
        """
        return self._call("answer_relevance", {"question": question or "", "answer": answer or ""}, repeat,
                          validate_relevance)["score"]

    def reverse_questions(self, answer: str, n: int = 3, *, repeat: int = 0) -> list[str]:
        """``n`` questions the answer would reply to, in the answer's language (Ragas
        *answer_relevancy*: embed them and average their cosine similarity to the real question;
        Es et al. 2024). Output: list of exactly ``n`` non-empty strings.
        Raises ValueError for n < 1, JudgeCallError when the call fails after retries.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        return self._call("reverse_questions", {"answer": answer or "", "n": str(n)}, repeat,
                          lambda o: validate_questions(o, n))["questions"]

    def context_relevance(self, question: str, contexts: list[str], *, repeat: int = 0) -> float:
        """Share of the retrieved chunks needed to answer the question (Ragas *context_relevancy*,
        ARES' context relevance), one call.

        Output: float in [0, 1] = needed chunks / retrieved chunks. Raises ValueError for empty
        contexts, JudgeCallError when the call fails after retries.
        """
        ctx = self._need_contexts(contexts)
        needed = self._call("context_relevance", {"question": question or "", "contexts": ctx}, repeat,
                            lambda o: validate_context_relevance(o, len(ctx)))["needed"]
        return sum(needed) / len(needed)

    def correctness(self, answer: str, reference: str, *, repeat: int = 0) -> dict:
        """Compare an answer with a reference answer to catch omissions and contradictions (as Ragas'
        *answer_correctness*: only a reference catches what an answer leaves out), one call.

        Output: dict with ``facts`` (list of {fact, status COVERED/MISSING/CONTRADICTED,
        justification}), ``n_facts``, ``coverage`` (COVERED / facts, None without facts),
        ``omissions`` and ``contradictions`` (lists of fact texts), ``judge_model``.
        Raises ValueError for a blank reference, JudgeCallError when the call fails after retries.
        """
        if not (reference and reference.strip()):
            raise ValueError("correctness needs a non-blank reference answer")
        facts = self._call("correctness", {"answer": answer or "", "reference": reference}, repeat,
                           validate_correctness)["facts"]
        n = len(facts)
        return {
            "facts": facts,
            "n_facts": n,
            "coverage": (sum(f["status"] == "COVERED" for f in facts) / n) if n else None,
            "omissions": [f["fact"] for f in facts if f["status"] == "MISSING"],
            "contradictions": [f["fact"] for f in facts if f["status"] == "CONTRADICTED"],
            "judge_model": self.model,
        }

    @staticmethod
    def _need_contexts(contexts: list[str]) -> list[str]:
        ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
        if not any(c.strip() for c in ctx):
            raise ValueError("this metric needs at least one non-blank retrieved context")
        return ctx

    # -- cost estimate --------------------------------------------------------------------------
    def dry_run_estimate(self, items: Iterable[Sequence]) -> dict:
        """Estimate what :meth:`judge` would cost over ``items`` without calling the server.

        Input: iterable of ``(question, answer, contexts)``. Output: dict ``calls`` (requests: 0 for
        an item with no context or a blank answer; else 1 decomposition + one verification per
        ``claims_per_call`` claims, claims counted by the rule-based
        :func:`~rag_eval_pipeline.core.judges.claims.split_claims` since the model's split is
        unknown), ``prompt_tokens_est`` (sum over those requests of ceil(characters of the rendered
        prompt / 4), the usual ~4 characters per token rule for English; Spanish runs ~10-20 %
        higher in tokens), ``cached_calls`` (of ``calls``, decomposition requests already in the
        cache), ``items``. Makes no network call. Raises ValueError for a malformed item.
        """
        calls = tokens = cached = n_items = 0
        dec_p, ver_p = self._prompts["claim_decomposition"], self._prompts["claim_verification"]
        for item in items:
            n_items += 1
            try:
                question, answer, contexts = item
            except (TypeError, ValueError):
                raise ValueError(f"item {n_items}: expected (question, answer, contexts)") from None
            ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
            if not any(c.strip() for c in ctx) or not (answer and answer.strip()):
                continue
            calls += 1
            tokens += math.ceil(len(dec_p.render(question=question or "", answer=answer)) / 4)
            if self.cache is not None and self.cache.lookup(
                    self.requested_model, dec_p.sha256,
                    self._inputs({"question": question or "", "answer": answer})) is not None:
                cached += 1
            claims = split_claims(answer) or [answer]
            rendered_ctx = render_chunks(ctx)
            for s in range(0, len(claims), self.claims_per_call):
                calls += 1
                tokens += math.ceil(len(ver_p.render(
                    contexts=rendered_ctx, claims=render_claims(claims[s:s + self.claims_per_call]))) / 4)
        return {"calls": calls, "prompt_tokens_est": tokens, "cached_calls": cached, "items": n_items}

    # -- one call, with cache and retries (task_calls.py) -----------------------------------------
    def _inputs(self, values: dict) -> dict:
        return self._calls.inputs(values)

    def _call(self, task: str, values: dict, repeat: int, validate: Callable[[Any], dict]) -> dict:
        return self._calls.call(task, self._prompts[task], values, repeat, validate)
