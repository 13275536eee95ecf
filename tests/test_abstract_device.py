"""jax.sharding.AbstractDevice: the kind of device an AbstractMesh stands for, which a
traced program can read (``get_abstract_mesh().abstract_device.platform``) to choose
platform-specific code. Expected values and reprs are JAX 0.10.2's."""
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.sharding import AbstractDevice, AbstractMesh, AxisType, PartitionSpec as P


def test_reprs_are_jax_s():
    gpu = AbstractDevice("gpu", 1, "cuda")
    assert repr(gpu) == "AbstractDevice(device_kind=gpu, num_cores=1, platform=cuda)"
    assert repr(AbstractMesh((4,), ("x",), abstract_device=gpu)) == (
        "AbstractMesh('x': 4, axis_types=(Auto,), device_kind=gpu, num_cores=1, "
        "platform=cuda)")
    assert repr(AbstractMesh((4,), ("x",))) == "AbstractMesh('x': 4, axis_types=(Auto,))"


def test_a_concrete_mesh_s_abstract_mesh_has_its_devices_kind():
    mesh = ft.make_mesh((2,), ("x",))
    assert mesh.abstract_mesh.abstract_device == AbstractDevice("cpu", None, "cpu")
    with ft.sharding.set_mesh(mesh):
        assert ft.sharding.get_abstract_mesh().abstract_device.platform == "cpu"
    assert ft.sharding.get_abstract_mesh().abstract_device is None  # no mesh: JAX's None


def test_a_program_reads_the_platform_of_the_abstract_mesh_it_is_traced_under():
    gpu = AbstractMesh((2,), ("x",), (AxisType.Explicit,),
                       abstract_device=AbstractDevice("gpu", 1, "cuda"))
    seen = []

    def f(x):
        seen.append(ft.sharding.get_abstract_mesh().abstract_device.platform)
        return x * 2

    with ft.sharding.use_abstract_mesh(gpu):
        ft.make_jaxpr(f)(fnp.ones(2))
    mesh = ft.make_mesh((2,), ("x",))
    ft.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(fnp.ones(4))
    assert seen == ["cuda", "cpu"]
    # Manual axes inside shard_map keep the mesh's device kind
    assert gpu.update_axis_types({"x": AxisType.Manual}).abstract_device == gpu.abstract_device


def test_bad_abstract_device_is_named():
    with pytest.raises(TypeError, match="abstract_device must be an AbstractDevice, got str"):
        AbstractMesh((2,), ("x",), abstract_device="gpu")
