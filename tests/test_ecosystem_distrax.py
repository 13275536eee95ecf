"""distrax (the pinned release of tests/ecosystem.py) runs unchanged on functrans: its
distributions sample, score, and give entropies and KL divergences, a Transformed
distribution goes through a bijector Chain, and a variational objective is differentiated
and optimised with optax under jit. Expected values come from the same programs on JAX
0.10.2 (CPU, float32); the same keys give the same threefry bits. Every program runs in a
child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)


def assert_close(got, want, atol, rtol=0.0):
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), atol=atol,
                               rtol=rtol)


# JAX 0.10.2's values of the program below.
_JAX = {
    "n_sample": [[1.004014253616333, -0.8126744031906128],
                 [-0.7481722235679626, -1.3427338600158691],
                 [-0.871232807636261, 2.177676200866699]],
    "n_logp": [[-1.4229607582092285, -2.0228092670440674],
               [-1.1988193988800049, -2.298135995864868],
               [-1.2984617948532104, -1.78545081615448]],
    "n_entropy": [1.4189385175704956, 2.1120858192443848],
    "n_kl": [0.18324285745620728, 1.3068528175354004],
    "c_logp": [-0.58177649974823, -1.08177649974823, -0.58177649974823, -1.08177649974823,
               -0.58177649974823],
    "c_ent": 0.9248473644256592, "c_kl": 0.11833859980106354,
    "m_sample": [[1.2956359386444092, 1.6775052547454834, 1.1807888746261597],
                 [-0.7718854546546936, 1.190470814704895, 2.037778377532959]],
    "m_logp": [-4.598067283630371, -3.127455711364746],
    "m_ent": 4.256815433502197, "m_kl": 3.625,
    "t_sample": [1.6986790895462036, 2.3026208877563477, 2.68635892868042, 1.6166281700134277],
    "t_logp": [-0.3240143060684204, -0.32493364810943604, -1.0035498142242432,
               -0.3932685852050781],
    "t_logp2": [-0.3240143060684204, -0.32493388652801514, -1.0035498142242432,
                -0.3932684659957886],
}


def test_distributions_entropies_kls_and_a_transformed_chain_as_on_jax():
    # Normal, Categorical (logits and probs) and MultivariateNormalDiag: samples, log_prob,
    # entropy, KL; a Transformed Normal through Chain([ScalarAffine, Sigmoid]) scored both by
    # sample_and_log_prob and by log_prob (the inverse). Samples are the same threefry bits
    # through float32 transcendental functions, and every value is a few float32 operations
    # of order one: within 1e-6 (functrans differed by 3e-7 at most). Categorical samples are
    # integers: equal ([2, 0, 2, 0, 2] on JAX).
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import numpy as np
        import distrax

        k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
        out = {}
        n = distrax.Normal(jnp.array([0.0, 1.0]), jnp.array([1.0, 2.0]))
        s = n.sample(seed=k1, sample_shape=3)
        out["n_sample"], out["n_logp"] = s.tolist(), n.log_prob(s).tolist()
        out["n_entropy"] = n.entropy().tolist()
        out["n_kl"] = n.kl_divergence(
            distrax.Normal(jnp.array([0.5, 0.0]), jnp.array([1.5, 1.0]))).tolist()
        c = distrax.Categorical(logits=jnp.array([0.2, -1.0, 0.7]))
        s = c.sample(seed=k2, sample_shape=5)
        out["c_sample"], out["c_logp"] = s.tolist(), c.log_prob(s).tolist()
        out["c_ent"] = float(c.entropy())
        out["c_kl"] = float(c.kl_divergence(
            distrax.Categorical(probs=jnp.array([0.3, 0.3, 0.4]))))
        m = distrax.MultivariateNormalDiag(jnp.array([0.0, 1.0, 2.0]), jnp.array([1.0, 0.5, 2.0]))
        s = m.sample(seed=k3, sample_shape=2)
        out["m_sample"], out["m_logp"] = s.tolist(), m.log_prob(s).tolist()
        out["m_ent"] = float(m.entropy())
        out["m_kl"] = float(m.kl_divergence(
            distrax.MultivariateNormalDiag(jnp.zeros(3), jnp.ones(3))))
        bij = distrax.Chain([distrax.ScalarAffine(shift=1.0, scale=2.0), distrax.Sigmoid()])
        t = distrax.Transformed(distrax.Normal(0.0, 1.0), bij)
        s, lp = t.sample_and_log_prob(seed=k4, sample_shape=4)
        out["t_sample"], out["t_logp"], out["t_logp2"] = (s.tolist(), lp.tolist(),
                                                          t.log_prob(s).tolist())
        print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["c_sample"] == [2, 0, 2, 0, 2]
    for name, want in _JAX.items():
        assert_close(res[name], want, atol=1e-6, rtol=1e-6)


def test_variational_fit_with_optax_under_jit_as_on_jax():
    # A mean-field Gaussian q over (mean, log-scale) of a Normal likelihood of five points:
    # the negative ELBO from 32 reparameterised samples (sample_and_log_prob), its gradient,
    # then 200 jitted adam(0.05) steps with fresh keys. On JAX 0.10.2: loss 10.86541 and
    # gradient mu [-6.5578165, -6.3162146], log_s [1.8582058, 6.4170518] at the start; losses
    # 10.917758, 7.2986636, 7.374671 at steps 0, 50, 199; final mu [1.0782727, -0.40970522],
    # log_s [-1.319865, -1.1968728]. Same samples, so the start agrees to float32 rounding of
    # 32-sample means (within 1e-5 relative; functrans: 1e-7); adam normalises each step, so
    # the trajectory stays within rounding too (functrans: 1.2e-7 on mu): held to 1e-5.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import numpy as np
        import distrax, optax
        data = jnp.array([0.5, 1.5, 2.0, 1.1, 0.7])

        def neg_elbo(params, key):
            q = distrax.MultivariateNormalDiag(params["mu"], jnp.exp(params["log_s"]))
            z, lq = q.sample_and_log_prob(seed=key, sample_shape=32)
            lik = distrax.Normal(z[:, :1], jnp.exp(z[:, 1:])).log_prob(data).sum(-1)
            prior = distrax.MultivariateNormalDiag(jnp.zeros(2), jnp.ones(2)).log_prob(z)
            return -jnp.mean(lik + prior - lq)

        params = {"mu": jnp.array([0.3, 0.0]), "log_s": jnp.array([-0.5, -0.5])}
        v0, g0 = jax.value_and_grad(neg_elbo)(params, jax.random.PRNGKey(0))
        opt = optax.adam(0.05)
        state = opt.init(params)

        @jax.jit
        def step(params, state, key):
            loss, g = jax.value_and_grad(neg_elbo)(params, key)
            updates, state = opt.update(g, state, params)
            return optax.apply_updates(params, updates), state, loss

        losses = []
        for k in jax.random.split(jax.random.PRNGKey(1), 200):
            params, state, loss = step(params, state, k)
            losses.append(float(loss))
        print(json.dumps({"loss0": float(v0), "grad_mu": g0["mu"].tolist(),
                          "grad_log_s": g0["log_s"].tolist(),
                          "losses": [losses[0], losses[50], losses[-1]],
                          "mu": params["mu"].tolist(), "log_s": params["log_s"].tolist()}))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want = {"loss0": 10.865409851074219, "grad_mu": [-6.557816505432129, -6.316214561462402],
            "grad_log_s": [1.858205795288086, 6.417051792144775],
            "losses": [10.917757987976074, 7.29866361618042, 7.37467098236084],
            "mu": [1.0782727003097534, -0.4097052216529846],
            "log_s": [-1.3198649883270264, -1.1968728303909302]}
    for name, value in want.items():
        assert_close(res[name], value, atol=0.0, rtol=1e-5)


def test_bijectors_derived_from_jaxprs_and_unsigned_categorical_samples_as_on_jax():
    # distrax's Lambda bijector and transformations.inv read the function's jaxpr and rebind
    # each equation's inverse with `prim.bind` (one output, as JAX's), pow's exponent a
    # literal; a Categorical with dtype uint32 marks the samples of an invalid row with
    # ones_like(draws) * -1, which wraps (JAX 0.10.2: 2**32 - 1). Values are a few float32
    # operations of order one: within 1e-6 relative (functrans differs by 1 ulp at most).
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import distrax
        from distrax._src.utils import transformations
        out = {}
        x = jnp.array([0.5, 1.5, 2.0])
        lam = distrax.Lambda(lambda v: v ** 3.5)
        y, ld = lam.forward_and_log_det(x)
        out["lam_y"], out["lam_ld"] = y.tolist(), ld.tolist()
        out["lam_inv"] = lam.inverse(y).tolist()
        out["inv_tanh"] = jax.jit(transformations.inv(lambda v: 2.0 * jnp.tanh(v) - 1.0))(
            jnp.array([0.1, 0.5])).tolist()
        c = distrax.Categorical(probs=jnp.array([[0.2, 0.8], [0.5, -0.5]]), dtype=jnp.uint32)
        s = c.sample(seed=jax.random.PRNGKey(3), sample_shape=3)
        out["c_dtype"], out["c_sample"] = str(s.dtype), s.tolist()
        print(json.dumps(out))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["c_dtype"] == "uint32" and res["c_sample"] == [[1, 2**32 - 1]] * 3
    want = {"lam_y": [0.0883883461356163, 4.133513927459717, 11.313708305358887],
            "lam_ld": [-0.4801049530506134, 2.266425848007202, 2.985630989074707],
            "lam_inv": [0.4999999701976776, 1.5, 2.0],
            "inv_tanh": [0.6183812618255615, 0.9729551076889038]}
    for name, value in want.items():
        assert_close(res[name], value, atol=0.0, rtol=1e-6)
