"""Transition rules by name, and the alternatives rule's arithmetic."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.decision.transition import TRANSITIONS, repeat_share, resolve_transition
from bayes_s2r.errors import InputError


def test_alternatives_are_worth_what_they_add_over_the_deployed_one():
    rule = bs.AlternativesTransition()
    mean, var = jnp.array([0.30, 0.05, 0.0]), jnp.array([0.02, 0.01, 0.0])
    for apply in (rule.apply, jax.jit(rule.apply)):
        m, v = apply(mean, var, 0.1, 0.6)
        np.testing.assert_allclose(m, [0.20, -0.05, -0.1], atol=1e-7)
        np.testing.assert_allclose(v, var)
    assert repeat_share(rule) == 0.0 and resolve_transition(rule) is rule
    with pytest.raises(InputError, match="AlternativesTransition.repeat_share"):
        bs.AlternativesTransition(repeat_share=-1.0)


def test_rules_are_found_by_the_name_a_campaign_stores():
    assert set(TRANSITIONS) == {"headroom", "alternatives", "none"}
    assert TRANSITIONS["alternatives"]() == bs.AlternativesTransition()
    assert TRANSITIONS["headroom"]() == bs.HeadroomTransition()
