"""The strict JSON reader, secret scrubbing in every escaping, and the skeleton restricted text is matched on."""

import json
import sys

import pytest

from rag_eval_pipeline.core.jsonio import MAX_DEPTH, JsonError, loads, nesting_depth
from rag_eval_pipeline.core.report.access import find_leaks, skeleton
from rag_eval_pipeline.core.secrets import scrub_reply, scrub_secret


def test_strict_reader_refuses_repeated_keys_and_deep_nesting_with_a_position():
    assert loads('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(JsonError) as exc:
        loads('{"decision": "answer", "x": 1, "decision": "error"}')
    assert exc.value.reason == "repeated_key" and "'decision' appears twice" in str(exc.value)
    with pytest.raises(JsonError) as exc:  # json.loads keeps the last value; nested objects too
        loads('{"a": {"k": 1, "k": 2}}')
    assert exc.value.reason == "repeated_key"
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(JsonError) as exc:
        loads(deep)
    # bracket number MAX_DEPTH + 1 is the first past the limit: 0-based offset MAX_DEPTH, column MAX_DEPTH + 1
    assert exc.value.reason == "too_deep" and (exc.value.lineno, exc.value.colno) == (1, MAX_DEPTH + 1)
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(ok) is not None  # exactly the limit is accepted
    with pytest.raises(JsonError) as exc:
        loads('{"x": ' + "[" * (MAX_DEPTH) + "]" * MAX_DEPTH + "}")  # 129 levels with the object
    assert exc.value.reason == "too_deep"
    assert nesting_depth('["[[[[", {"a": "]]"}]') == (2, None)  # brackets inside strings do not count


def test_strict_reader_locates_malformed_json_and_never_raises_recursion_error():
    with pytest.raises(JsonError) as exc:
        loads('{"a": 1,\n "b": }')
    assert exc.value.reason == "malformed" and (exc.value.lineno, exc.value.colno) == (2, 7)
    with pytest.raises(JsonError) as exc:
        loads("1" * (sys.get_int_max_str_digits() + 1))
    assert exc.value.reason == "bad_value"
    with pytest.raises(JsonError):
        loads(b"\xff{}")
    assert loads(b'{"nan": NaN}')["nan"] != loads(b'{"nan": NaN}')["nan"]  # NaN stays readable: fields refuse it


KEY = "sk-live-CANARY-0123456789"


def test_a_secret_is_scrubbed_in_every_escaping():
    u = "".join(f"\\u{ord(c):04x}" for c in KEY)                 # JSON, lower-case hex
    U = "".join(f"\\u{ord(c):04X}" for c in KEY)                 # JSON, upper-case hex
    mixed = KEY[:5] + "".join(f"\\u{ord(c):04x}" for c in KEY[5:9]) + KEY[9:]
    url = "".join(f"%{b:02X}" for b in KEY.encode())
    html_dec = "".join(f"&#{ord(c)};" for c in KEY)
    html_hex = "".join(f"&#x{ord(c):x};" for c in KEY)
    py = "".join(f"\\x{ord(c):02x}" for c in KEY)
    for form in (KEY, u, U, mixed, url, html_dec, html_hex, py):
        assert scrub_secret(f"before {form} after", KEY, replacement="[redacted]", patterns=False) == \
            "before [redacted] after", form
    assert json.loads(f'"{u}"') == KEY  # the escaped form is the key once parsed


def test_scrub_reply_scrubs_parsed_values_and_keys_but_keeps_other_words():
    reply = json.loads('{"answer": "you sent \\u0042earer ' + KEY + '", "hits": [{"id": "' + KEY + '"}], "'
                       + KEY + '": 1, "n": 3}')
    out = scrub_reply(reply, ["Bearer " + KEY, KEY], replacement="[redacted]", patterns=False)
    assert out == {"answer": "you sent [redacted]", "hits": [{"id": "[redacted]"}], "[redacted]": 1, "n": 3}
    # without the credential patterns an answer about bearer tokens keeps its words
    assert scrub_reply({"a": "use a Bearer token"}, [KEY], patterns=False) == {"a": "use a Bearer token"}


def test_skeleton_drops_invisible_characters_and_maps_confusables():
    secret = "El agente debe anotar el código ZX-INTERNAL-7731"
    zero_width = "\u200b".join(secret)
    cyrillic = secret.replace("a", "\u0430").replace("o", "\u043e").replace("e", "\u0435")  # а о е look alike
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in secret)
    for disguised in (zero_width, cyrillic, fullwidth, secret.upper(), secret.replace(" ", "\u00a0\u00ad")):
        assert skeleton(disguised) == skeleton(secret), disguised
        assert find_leaks([f"Respuesta: {disguised}."], [secret]) == {f"Respuesta: {disguised}."}
    assert skeleton("Guía: ¡Envío gratis!") == "guíaenvíogratis"
    assert find_leaks(["un texto público sobre envíos"], [secret]) == set()
