"""Verdict families: one per calibration level, registered once (a second one is a mistake of the code)."""

import pytest

from rag_eval_pipeline.core.registry import RegistryError
from rag_eval_pipeline.labelling.definitions import FAMILIES, VerdictFamily, family_for, register


def test_a_level_has_one_family_and_a_second_registration_is_refused():
    assert set(FAMILIES.names()) >= {"response", "claim"}
    assert family_for("response").definitions.keys() == {"attributable", "not_attributable"}
    assert family_for("sentence") is None
    # it used to replace the response family silently
    impostor = VerdictFamily("response", "t", "q?", {"x": "y"}, "the answer", "nowhere")
    with pytest.raises(RegistryError, match="verdict family 'response' is registered twice"):
        register(impostor)
    assert family_for("response").definitions.keys() == {"attributable", "not_attributable"}
