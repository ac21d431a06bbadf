"""The strict JSON reader, secret scrubbing in every escaping, and the skeleton restricted text is matched on."""

import base64
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


def test_a_secret_is_scrubbed_encoded_cut_or_in_another_case():
    tok = "tok_9f8e7d6c5b4a"  # 16 characters
    forms = {
        "base64": base64.b64encode(tok.encode()).decode(),            # dG9rXzlmOGU3ZDZjNWI0YQ==
        "hex": tok.encode().hex(),                                     # 746f6b5f...
        "HEX": tok.encode().hex().upper(),
        "URL twice": "".join(f"%25{b:02x}" for b in tok.encode()),    # %2574%256f...
        "HTML without ;": "".join(f"&#{ord(c)}" for c in tok),
        "Python \\U": "".join(f"\\U{ord(c):08x}" for c in tok),
        "JavaScript \\u{}": "".join(f"\\u{{{ord(c):x}}}" for c in tok),
        "upper case": tok.upper(),
        "zero-width split": tok[:6] + "\u200b" + tok[6:],
    }
    for name, form in forms.items():
        assert scrub_secret(f"echo: {form} end", tok, patterns=False) == "echo: *** end", name
    # "user:" is 5 bytes: the token starts at bit 40 of the base64 text, inside its 7th character (bits 36-41):
    # "dXNlcjp" stays, every later character is made of the token's bits alone
    assert scrub_secret(base64.b64encode(b"user:" + tok.encode()).decode(), tok, patterns=False) == "dXNlcjp***"
    # base64url: "~~~" + tok encodes with "-" and "_" where base64 has "+" and "/" ("fn5+" / "fn5-")
    url = base64.urlsafe_b64encode(b"~~~" + tok.encode()).decode()
    assert url.startswith("fn5-") and scrub_secret(url, tok, patterns=False) == "fn5-***"
    # any run of 12+ characters of the secret (a reply cut short), extended as far as it goes; 11 are not enough
    assert scrub_secret("cut: tok_9f8e7d6c… and 9f8e7d6c5b4", tok, patterns=False) == "cut: ***… and 9f8e7d6c5b4"
    assert scrub_secret("tail: 9F8E7D6C5B4A.", tok, patterns=False) == "tail: ***."  # last 12, other case
    # a Basic header's base64 is looked for decoded too: "user:s3cr3tpass" and the password alone
    basic = "Basic " + base64.b64encode(b"user:s3cr3tpass").decode()
    assert scrub_secret("for user:s3cr3tpass; pw s3cr3tpass", basic, patterns=False) == "for ***; pw ***"
    # not covered (documented): a reversed secret
    assert scrub_secret(tok[::-1], tok, patterns=False) == tok[::-1]


def test_scrub_reply_finds_a_secret_split_over_two_fields_and_keeps_colliding_keys():
    tok = "tok_9f8e7d6c5b4a"
    assert scrub_reply({"a": "x tok_9f8e", "b": "7d6c5b4a y"}, [tok]) == {"a": "x ***", "b": "*** y"}
    assert scrub_reply({"tok_9f8e7d": "6c5b4a"}, [tok]) == {"***": "***"}  # key then its value
    assert scrub_reply({"a": "tok_9f8e"}, [tok]) == {"a": "tok_9f8e"}  # 8 characters alone: not a run of 12
    # two keys that scrub to the same text: the second is renamed, neither value is lost
    assert scrub_reply({tok: 1, "***": 2}, [tok]) == {"***": 1, "***#2": 2}
    # the renamed key then meets the real "x***#2": that one is renamed in turn, again by appending "#2"
    assert scrub_reply({"x" + tok: 1, "x***": 2, "x***#2": 3}, [tok]) == {"x***": 1, "x***#2": 2, "x***#2#2": 3}


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
    assert skeleton("Guía: ¡Envío gratis!") == "guiaenviogratis"  # accents go too
    # an accent-stripped or accent-added copy is the same text (it used to pass as another)
    restricted = "Project Falcon acquisition closes in March at 40 dollars a share"
    for copy in ("Projéct Fälcon acquisition clôses in March", "El agente debe anotar el codigo ZX-INTERNAL-7731"):
        assert find_leaks([copy], [restricted, secret]) == {copy}, copy
    assert find_leaks(["un texto público sobre envíos"], [secret]) == set()
