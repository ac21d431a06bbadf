"""Configuration of the live kinds: defaults filled in, mistakes refused when the file is loaded."""

import pytest
import yaml

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict


def load_with(tmp_path, system):
    cfg = sample_config_dict()
    cfg["systems"].append(system)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return load_config(path)


def test_the_shipped_live_configuration_loads_with_defaults():
    cfg = load_config(REPO_ROOT / "data" / "configs" / "live_http.yaml")
    http = cfg.system("bm25_k5_http")
    assert http.url == "http://127.0.0.1:8766/answer" and http.version_header == "X-Model-Version"
    assert (http.timeout_s, http.max_retries, http.concurrency, http.rate_per_s) == (10.0, 2, 4, 50.0)
    assert http.headers_from_env == {} and http.abstain_phrases


@pytest.mark.parametrize("system, message", [
    ({"kind": "http", "url": "ftp://x"}, "url must be an http"),
    ({"kind": "http", "url": "http://x", "timeout": 3}, r"unknown key\(s\) \['timeout'\]"),
    ({"kind": "http", "url": "http://x", "timeout_s": 0}, "timeout_s must be a number > 0"),
    ({"kind": "http", "url": "http://x", "max_retries": -1}, "max_retries must be an integer >= 0"),
    ({"kind": "http", "url": "http://x", "concurrency": 0}, "concurrency must be an integer >= 1"),
    ({"kind": "http", "url": "http://x", "headers": {"Authorization": "Bearer sk-1"}}, "headers_from_env"),
    ({"kind": "http", "url": "http://x", "headers_from_env": {"Authorization": "not a name"}},
     "environment variable name"),
    ({"kind": "http", "url": "http://x", "response_fields": {"answer": "a"}}, "needs 'retrieved'"),
    ({"kind": "http", "url": "http://x", "response_fields": {"retrieved": "r", "hits": "h"}},
     r"unknown key\(s\) \['hits'\]"),
    ({"kind": "python", "callable": "module.function"}, "package.module:function"),
    ({"kind": "traces"}, "path"),
    ({"kind": "traces", "path": "t.jsonl", "format": "zipkin"}, "format must be one of"),
])
def test_mistakes_are_refused_naming_file_entry_and_key(tmp_path, system, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_with(tmp_path, {"name": "live", **system})
    assert str(tmp_path / "config.yaml") in str(err.value) and "systems[3] (live" in str(err.value)
