"""TensorFlow Probability's JAX substrate (the pinned tfp-nightly of tests/ecosystem.py) runs
unchanged on functrans: distributions sample and score, their parameters are differentiated
(reparameterised Gamma samples through ``lax.random_gamma_grad``, cdfs through
``lax.igamma``/``igammac``), ``tfp.math``'s Kahan sum is a ``lax.reduce`` with a two-operand
reducer, and an HMC chain runs under jit. Expected values come from the same programs on JAX
0.10.2 (CPU, float32); the same keys give the same threefry bits, so values differ only by
float32 rounding of the transcendental functions. Every program runs in a child process
under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)


def _close(got, want, atol, rtol=0.0):
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), atol=atol,
                               rtol=rtol)


# JAX 0.10.2's samples and log-probabilities of the program below.
_JAX_DISTRIBUTIONS = {
    "normal": ([0.6138883233070374, -0.22951394319534302, 2.435481071472168, 1.279417872428894],
               [-1.3272860050201416, -1.4426681995391846, -2.156867504119873,
                -1.4594019651412964]),
    "gamma": ([[2.191002607345581, 1.4946200847625732], [1.8084356784820557, 0.25705796480178833],
               [0.31058835983276367, 0.7833350300788879]],
              [[-1.380985140800476, -2.8854663372039795], [-1.0949805974960327,
                                                          0.11775562167167664],
               [-1.4908331632614136, -1.2690762281417847]]),
    "beta": ([0.27513882517814636, 0.2305486798286438, 0.4232121407985687, 0.2553020417690277],
             [0.550877571105957, 0.49345898628234863, 0.5244641304016113, 0.5300463438034058]),
    "dirichlet": ([[0.18733495473861694, 0.491189569234848, 0.32147547602653503],
                   [0.27045997977256775, 0.6407500505447388, 0.0887899100780487]],
                  [1.1137518882751465, -1.193735122680664]),
    "mvn": ([[1.6549177169799805, -0.3256368637084961], [2.6018404960632324, 1.347057819366455],
             [1.752035140991211, -0.08363175392150879]],
            [-2.760525703430176, -4.112788200378418, -2.8503000736236572]),
    "categorical": ([1, 1, 2, 1, 0, 1],
                    [-0.48839592933654785, -0.48839592933654785, -1.9883959293365479,
                     -0.48839592933654785, -1.38839590549469, -0.48839592933654785]),
    "softplus_chain": ([2.1480274200439453, 1.8479645252227783, 1.816230058670044],
                       [-0.8160287737846375, -0.7534106969833374, -0.7535144090652466]),
}


def test_distributions_sample_and_score_as_on_jax():
    # Normal, Gamma (Marsaglia-Tsang rejection sampling), Beta and Dirichlet (from Gammas),
    # MultivariateNormalTriL, Categorical and a TransformedDistribution through a bijector
    # Chain (Shift, Scale, Softplus). Samples are the same bits pushed through float32 log,
    # sqrt and erfinv: within 1e-6 (functrans differed by at most 2.4e-7); log_probs add a
    # few float32 lgamma/log terms of order one: within 4e-6 (functrans: 7.2e-7 at most).
    # Categorical samples are integers: equal.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import numpy as np
        from tensorflow_probability.substrates import jax as tfp
        tfd, tfb = tfp.distributions, tfp.bijectors

        ks = jax.random.split(jax.random.PRNGKey(42), 7)
        dists = [
            ("normal", tfd.Normal(jnp.array(0.5), jnp.array(1.5)), 4),
            ("gamma", tfd.Gamma(jnp.array([2.5, 0.7]), jnp.array([1.5, 2.0])), 3),
            ("beta", tfd.Beta(jnp.array(2.0), jnp.array(3.0)), 4),
            ("dirichlet", tfd.Dirichlet(jnp.array([1.0, 2.0, 3.0])), 2),
            ("mvn", tfd.MultivariateNormalTriL(jnp.array([1.0, -1.0]),
                                               jnp.array([[1.0, 0.0], [0.5, 2.0]])), 3),
            ("categorical", tfd.Categorical(logits=jnp.array([0.1, 1.0, -0.5])), 6),
            ("softplus_chain", tfd.TransformedDistribution(
                tfd.Normal(0.0, 1.0),
                tfb.Chain([tfb.Shift(1.0), tfb.Scale(2.0), tfb.Softplus()])), 3),
        ]
        out = {}
        for (name, d, n), k in zip(dists, ks):
            s = d.sample(n, seed=k)
            out[name] = [np.asarray(s).tolist(), np.asarray(d.log_prob(s)).tolist(),
                         str(s.dtype)]
        mvn = dists[4][1]
        out["mvn_cov"] = np.asarray(mvn.covariance()).tolist()
        out["categorical_entropy"] = float(dists[5][1].entropy())
        print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    for name, (samples, log_probs) in _JAX_DISTRIBUTIONS.items():
        got_samples, got_log_probs, dtype = res[name]
        assert dtype == ("int32" if name == "categorical" else "float32"), name
        if name == "categorical":
            assert got_samples == samples
        else:
            _close(got_samples, samples, atol=1e-6, rtol=1e-6)
        _close(got_log_probs, log_probs, atol=4e-6)
    _close(res["mvn_cov"], [[1.0, 0.5], [0.5, 4.25]], atol=1e-6)  # L L^T exactly
    _close(res["categorical_entropy"], 0.9182958602905273, atol=1e-6)


def test_gradients_incomplete_gamma_and_kahan_sum_as_on_jax():
    # On JAX 0.10.2: grad of the Gamma NLL in log-parameters [-0.11039524, -0.55196047];
    # E[s^2] of 64 reparameterised Gamma(1.7, 2) samples 1.3663797 and its derivative in the
    # concentration 1.2953277 (random_gamma_grad); sum of Gamma(2.2, 1.5).cdf 1.7218583 and
    # its derivative -0.81917584 (igamma, igamma_grad_a); Poisson(3).cdf [0.04978704,
    # 0.42319003, 0.91608214] (igammac); igammainv [0.03209237, 1.678347, 10.532069].
    # These are float32 results of series and continued fractions (iterated to float32
    # epsilon) and of 64-sample means: within 2e-6 relative (functrans: 2e-7 at most, 4e-7
    # for the cdf sum), except the NLL gradient's first entry: a sum of four terms of order
    # one (log x, digamma, log b) that cancel to -0.11, so its rounding is absolute, about
    # an ulp of the terms: within 1e-6 (functrans: 3.1e-7). The Kahan sum of 1000 float32 0.1s folds in XLA's order, so its
    # total (100.0) and correction (-1.4901161e-06) are the same bits; its gradient is exact.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import numpy as np
        from tensorflow_probability.substrates import jax as tfp
        tfd = tfp.distributions
        x = jnp.array([0.3, 1.2, 2.5, 0.9])

        def nll(params):
            a, b = jnp.exp(params)
            return -jnp.sum(tfd.Gamma(a, b).log_prob(x))

        def expected_square(a):
            s = tfd.Gamma(a, 2.0).sample(64, seed=jax.random.PRNGKey(7))
            return jnp.mean(s ** 2)

        def cdf_sum(a):
            return jnp.sum(tfd.Gamma(a, 1.5).cdf(x))

        v_es, g_es = jax.value_and_grad(expected_square)(1.7)
        v_cdf, g_cdf = jax.value_and_grad(cdf_sum)(2.2)
        kahan = tfp.math.reduce_kahan_sum(jnp.full((3, 1000), 0.1), axis=1)
        g_kahan = jax.grad(lambda v: tfp.math.reduce_kahan_sum(v ** 2).total)(
            jnp.array([1.0, 2.0, 3.0]))
        print(json.dumps({
            "grad_nll": np.asarray(jax.grad(nll)(jnp.array([0.4, 0.1]))).tolist(),
            "expected_square": [float(v_es), float(g_es)],
            "cdf": [float(v_cdf), float(g_cdf)],
            "poisson_cdf": np.asarray(tfd.Poisson(rate=3.0).cdf(
                jnp.array([0.0, 2.0, 5.0]))).tolist(),
            "igammainv": np.asarray(tfp.math.igammainv(
                jnp.array([0.5, 2.0, 7.0]), jnp.array([0.2, 0.5, 0.9]))).tolist(),
            "kahan": np.asarray(kahan.total).tolist(),
            "kahan_correction": np.asarray(kahan.correction).tolist(),
            "grad_kahan": np.asarray(g_kahan).tolist(),
        }))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want = {"grad_nll": [-0.11039524525403976, -0.5519604682922363],
            "expected_square": [1.366379737854004, 1.2953276634216309],
            "cdf": [1.721858263015747, -0.8191758394241333],
            "poisson_cdf": [0.049787044525146484, 0.42319002747535706, 0.9160821437835693],
            "igammainv": [0.032092366367578506, 1.6783469915390015, 10.532069206237793]}
    for name, value in want.items():
        _close(res[name], value, atol=1e-6 if name == "grad_nll" else 0.0, rtol=2e-6)
    assert res["kahan"] == [100.0] * 3
    assert res["kahan_correction"] == [-1.4901161193847656e-06] * 3
    assert res["grad_kahan"] == [2.0, 4.0, 6.0]


def test_hmc_chain_under_jit_as_on_jax():
    # tfp.mcmc.HamiltonianMonteCarlo (step 0.3, 5 leapfrog steps) on a correlated 2-d
    # Gaussian, 20 burn-in and 60 kept steps from the same seed, the whole chain under jit.
    # On JAX 0.10.2: every step accepted, sample mean [0.7065861, -1.2963172], last sample
    # [0.7093042, -1.4313991]. The same proposals (threefry) and acceptance decisions; the
    # 400 leapfrog gradients compound float32 rounding (functrans differed by 7e-7), so
    # positions are held to 1e-5.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import numpy as np
        from tensorflow_probability.substrates import jax as tfp
        tfd = tfp.distributions

        target = tfd.MultivariateNormalTriL(
            loc=jnp.array([1.0, -1.0]), scale_tril=jnp.array([[1.0, 0.0], [0.8, 0.6]]))
        kernel = tfp.mcmc.HamiltonianMonteCarlo(target.log_prob, step_size=0.3,
                                                num_leapfrog_steps=5)

        @jax.jit
        def run(key):
            return tfp.mcmc.sample_chain(60, jnp.zeros(2), kernel=kernel, num_burnin_steps=20,
                                         trace_fn=lambda _, r: r.is_accepted, seed=key)
        samples, accepted = run(jax.random.split(jax.random.PRNGKey(42), 8)[0])
        print(json.dumps({"mean": np.asarray(samples.mean(0)).tolist(),
                          "last": np.asarray(samples[-1]).tolist(),
                          "accepted": float(accepted.mean()), "shape": list(samples.shape)}))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["shape"] == [60, 2] and res["accepted"] == 1.0
    _close(res["mean"], [0.7065861225128174, -1.296317219734192], atol=1e-5)
    _close(res["last"], [0.70930415391922, -1.4313991069793701], atol=1e-5)
