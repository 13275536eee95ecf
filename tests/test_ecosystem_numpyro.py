"""numpyro runs unchanged on functrans (``functrans.as_jax``): NUTS on the eight-schools
model and SVI with an AutoNormal guide, checked against the same programs on JAX 0.10.2 and
against posteriors known independently. Each program runs in a child process with the pinned
numpyro of tests/ecosystem.py."""
from __future__ import annotations

import json
import math

import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)

EIGHT_SCHOOLS = """
    import json
    import numpy as np
    import jax
    import numpyro, numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS
    from numpyro.diagnostics import effective_sample_size

    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])

    def model(sigma, y=None):  # non-centered
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("J", 8):
            theta_raw = numpyro.sample("theta_raw", dist.Normal(0.0, 1.0))
            theta = numpyro.deterministic("theta", mu + tau * theta_raw)
            numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=500, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), sigma, y=y, extra_fields=("diverging",))
    s = mcmc.get_samples(group_by_chain=True)
    out = {k: {"mean": float(np.mean(s[k])), "sd": float(np.std(s[k])),
               "ess": float(effective_sample_size(np.asarray(s[k])))} for k in ("mu", "tau")}
    out["theta_shape"] = list(np.shape(s["theta"]))
    out["divergences"] = int(np.sum(mcmc.get_extra_fields()["diverging"]))
    print(json.dumps(out))
"""

# The same program on JAX 0.10.2 (same numpyro): means, sds and effective sample sizes.
JAX_RUN = {"mu": (4.380878, 3.2677596, 462.9), "tau": (3.7056863, 3.3489032, 336.0)}
# The posterior itself: JAX, 4 chains x (1000 warmup + 20000 draws) of the same model; effective
# sample sizes 80640 (mu) and 51670 (tau), so these means are within ~0.015 of the truth.
REFERENCE = {"mu": (4.3965, 3.3142), "tau": (3.5669, 3.2077)}


def test_nuts_eight_schools_posterior_means():
    res = json.loads(run_as_jax(EIGHT_SCHOOLS).strip().splitlines()[-1])
    assert res["theta_shape"] == [1, 500, 8]
    for name in ("mu", "tau"):
        got = res[name]
        # the chain mixes (JAX's run of the same program: ESS 463 and 336 of 500)
        assert got["ess"] > 100, (name, got)
        # Monte Carlo standard error of a posterior mean: sd / sqrt(ESS). functrans's chain
        # is not JAX's bit for bit (float32 rounding differs, so trajectories diverge), so the
        # two means are independent estimates: their difference has the combined error.
        se = got["sd"] / math.sqrt(got["ess"])
        jax_mean, jax_sd, jax_ess = JAX_RUN[name]
        se_jax = jax_sd / math.sqrt(jax_ess)
        assert abs(got["mean"] - jax_mean) < 4 * math.hypot(se, se_jax), (name, got)
        ref_mean, ref_sd = REFERENCE[name]
        assert abs(got["mean"] - ref_mean) < 4 * math.hypot(se, 0.015), (name, got)
    # mu's posterior is close to normal: its sd estimate has error ~ sd / sqrt(2 ESS)
    mu = res["mu"]
    assert abs(mu["sd"] - REFERENCE["mu"][1]) < 4 * REFERENCE["mu"][1] / math.sqrt(2 * mu["ess"])


SVI_PROGRAM = """
    import json
    import numpy as np
    import jax, jax.numpy as jnp
    import numpyro, numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    x = 4.0 + jnp.array([1.2, 0.4, 2.1, 1.7, 0.9, 1.4, 0.2, 1.1, 1.8, 1.3])

    def model(x):
        mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
        with numpyro.plate("N", x.shape[0]):
            numpyro.sample("obs", dist.Normal(mu, 1.0), obs=x)

    svi = SVI(model, AutoNormal(model), Adam(0.05), Trace_ELBO(num_particles=4))
    result = svi.run(jax.random.PRNGKey(1), 1000, x, progress_bar=False)
    losses = np.asarray(result.losses)
    p = result.params
    print(json.dumps({"first": float(losses[:10].mean()), "last": float(losses[-100:].mean()),
                      "loc": float(p["mu_auto_loc"]), "scale": float(p["mu_auto_scale"])}))
"""


def test_svi_autonormal_adam_conjugate_normal():
    res = json.loads(run_as_jax(SVI_PROGRAM).strip().splitlines()[-1])
    # JAX 0.10.2, same program: first 75.59756, last 15.971108, loc 5.126752, scale 0.2953821.
    # functrans's PRNG gives JAX's bits, so the optimization path is the same up to float32
    # rounding (seen: 2e-7 relative).
    assert res["first"] == pytest.approx(75.59756, rel=1e-4)
    assert res["last"] == pytest.approx(15.971108, rel=1e-4)
    assert res["loc"] == pytest.approx(5.126752, rel=1e-4)
    assert res["scale"] == pytest.approx(0.2953821, rel=1e-4)
    assert res["last"] < res["first"] - 50  # the ELBO loss fell
    # The exact posterior: precision 10 + 1/2^2 = 10.25, mean sum(x) / 10.25 = 5.08293,
    # sd 0.31235. A constant Adam step of 0.05 on a 4-particle ELBO estimate leaves the final
    # iterate jittering by about a step, so: loc within 0.1 (a third of a posterior sd),
    # scale within 15%.
    assert abs(res["loc"] - 52.1 / 10.25) < 0.1
    assert abs(res["scale"] / (1 / math.sqrt(10.25)) - 1) < 0.15
