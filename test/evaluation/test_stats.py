"""`mango.evaluation.stats` against scipy's own implementations and against published figures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from mango.evaluation.stats import a12, compare, pp_per_min, sign_flip_test, wilson


@pytest.mark.parametrize(("k", "n"), [(6, 42), (18, 42), (0, 10), (10, 10), (37, 50), (1, 3)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_wilson_on_volos_real_robot_table_sizes() -> None:
    # 6/42 and 18/42 (14 % and 43 % on 42 trials), worked by hand from Wilson's formula
    # (centre (p + z^2/2n) / (1 + z^2/n), z = 1.95996) to four places
    assert wilson(6, 42) == pytest.approx((0.0672, 0.2784), abs=1e-4)
    assert wilson(18, 42) == pytest.approx((0.2912, 0.5780), abs=1e-4)
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_pp_per_min_reproduces_motormind() -> None:
    assert pp_per_min(0.667, 223.4) == pytest.approx(17.91, abs=0.005)


def test_exact_sign_flip_matches_scipy_permutation_test() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0, 1, 10), rng.uniform(0, 1, 10)
    a[:4] += 0.3
    ours = sign_flip_test(a, b)
    ref = sps.permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                               n_resamples=np.inf, alternative="two-sided")
    assert ours.exact and ours.resamples == 2 ** 10
    assert ours.p == pytest.approx(ref.pvalue, abs=1e-12)
    assert ours.mean_diff == pytest.approx(float(np.mean(a - b)))


def test_monte_carlo_sign_flip_is_close_and_never_zero() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0, 1, 30), rng.uniform(0, 1, 30)
    ours = sign_flip_test(a + 0.1, b, resamples=20_000)
    ref = sps.permutation_test((a + 0.1, b), lambda x, y: np.mean(x - y),
                               permutation_type="samples", n_resamples=20_000,
                               alternative="two-sided", rng=1)
    assert not ours.exact and abs(ours.p - ref.pvalue) < 0.02
    far = sign_flip_test(np.ones(30), np.zeros(30), resamples=999)
    assert far.p == pytest.approx(1 / 1000)  # Phipson-Smyth: (0 + 1) / (999 + 1)
    same = sign_flip_test([0.5] * 5, [0.5] * 5)
    assert same.p == 1.0


def test_a12_matches_mann_whitney_and_romano() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 5, 25).astype(float), rng.integers(1, 6, 30).astype(float)
    u = sps.mannwhitneyu(x, y, alternative="two-sided").statistic
    assert a12(x, y).a12 == pytest.approx(u / (len(x) * len(y)))
    assert a12([1, 2, 3], [1, 2, 3]).magnitude == "negligible"
    assert a12([4, 5, 6], [1, 2, 3]) == a12([4, 5, 6], [1, 2, 3.0])
    assert a12([4, 5, 6], [1, 2, 3]).a12 == 1.0 and a12([4, 5, 6], [1, 2, 3]).magnitude == "large"
    # Romano's bounds on |2 A12 - 1|: A12 0.6 -> 0.2 small, 0.7 -> 0.4 medium
    assert a12([1, 0], [0] * 5).a12 == 0.75  # (5 wins + 5 ties / 2) / 10
    assert a12([2.0] * 3 + [0.0] * 2, [1.0] * 5).magnitude == "small"  # A12 0.6
    assert a12([2.0] * 7 + [0.0] * 3, [1.0] * 10).magnitude == "medium"  # A12 0.7


def test_compare_picks_the_test_by_normality() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.normal(0, 1, 40), rng.normal(1, 1, 40)
    c = compare(a, b)
    assert c.test == "student_t" and c.normal and c.significant
    assert c.p == pytest.approx(sps.ttest_ind(a, b).pvalue)
    skew = rng.exponential(1, 40) ** 3
    k = compare(skew, skew + 0.5)
    assert k.test == "kruskal_wallis" and not k.normal
    assert k.p == pytest.approx(sps.kruskal(skew, skew + 0.5).pvalue)
    assert compare(a, b, a).test == "kruskal_wallis"  # three groups
    with pytest.raises(ValueError, match="three or more"):
        compare([1.0, 2.0], [3.0, 4.0])
