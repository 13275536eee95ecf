"""ml_dtypes (bfloat16, float8) is imported on first need, not by ``import functrans``: its
import costs more than half of functrans' own. Each case runs in a fresh interpreter, where
``sys.modules`` tells whether it was imported."""
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ml_dtypes")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_and_ordinary_work_leave_ml_dtypes_unimported():
    out = _run("""
        import sys
        import numpy as np
        import functrans as ft
        import functrans.numpy as fnp
        from functrans import lax
        x = fnp.linspace(0.0, 1.0, 5, dtype="float32")
        y = ft.jit(lambda v: fnp.sin(v) * 2 + lax.cond(v[0] > 0, lambda: 1.0, lambda: 0.0))(x)
        g = ft.grad(lambda v: fnp.sum(v.astype("float16") ** 2).astype("float32"))(x)
        assert ft.dtypes.canonicalize_dtype("int8") == np.int8
        assert not ft.dtypes.issubdtype(np.float32, np.integer)
        fnp.result_type(np.int8, 1.0), fnp.promote_types("float16", "int32")
        try:
            fnp.asarray(np.array(["a"]))
        except TypeError:
            pass
        print("ml_dtypes" in sys.modules, y.dtype, g.dtype)
    """)
    assert out == "False float32 float32"


@pytest.mark.parametrize("ask", [
    "fnp.bfloat16",
    "fnp.float8_e4m3fn",
    "ft.dtypes.bfloat16",
    "fnp.dtype('bfloat16')",
    "fnp.zeros(2, 'bfloat16').dtype",
    "fnp.arange(3.0).astype('bfloat16').dtype",
    "ft.dtypes.canonicalize_dtype('bfloat16')",
])
def test_asking_for_a_narrow_type_imports_it(ask):
    out = _run(f"""
        import sys
        import functrans as ft
        import functrans.numpy as fnp
        before = "ml_dtypes" in sys.modules
        v = {ask}
        print(before, "ml_dtypes" in sys.modules, "float8" in str(v) or "bfloat16" in str(v))
    """)
    assert out == "False True True"


def test_values_of_a_user_imported_ml_dtypes_compute_through_float32():
    # functrans has not looked at ml_dtypes yet when the first bfloat16 value arrives.
    out = _run("""
        import ml_dtypes
        import numpy as np
        import functrans as ft
        import functrans.numpy as fnp
        x = np.array([1.0, 2.0, 3.0], ml_dtypes.bfloat16)
        y = fnp.sin(x)
        z = ft.jit(lambda v: v * 2 + 0.5)(x)
        w = fnp.asarray(x) + np.int32(1)
        print(y.dtype, z.dtype, w.dtype, ft.dtypes.issubdtype(ml_dtypes.bfloat16, np.floating),
              np.asarray(z).astype(np.float32).tolist())
    """)
    assert out == "bfloat16 bfloat16 bfloat16 True [2.5, 4.5, 6.5]"


def test_narrow_dtype_check_of_a_user_type_before_any_other_use():
    out = _run("""
        import ml_dtypes
        import numpy as np
        from functrans.core import dtypes
        print(dtypes.is_narrow_float(np.dtype(ml_dtypes.float8_e5m2)),
              dtypes.kind(np.dtype(ml_dtypes.bfloat16)),
              dtypes.is_narrow_float(np.float32))
    """)
    assert out == "True f False"
