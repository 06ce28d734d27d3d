"""Loading op packages and introspecting the registry from Python."""

import pytest

import opgraph


def test_loaded_package_lists_its_ops(test_ops):
    library = opgraph.load_library(test_ops)
    assert library.namespace == "test_ops"
    assert "test_ops::scale" in library.ops
    assert set(library.ops) <= set(opgraph.list_ops())
    assert opgraph.list_ops() == sorted(opgraph.list_ops())
    assert any(lib.path == library.path for lib in opgraph.loaded_libraries())


def test_loading_twice_is_harmless(test_ops):
    before = opgraph.list_ops()
    again = opgraph.load_library(str(test_ops))
    assert again.ops == opgraph.load_library(test_ops).ops
    assert opgraph.list_ops() == before


def test_schema_introspection(test_ops):
    schema = opgraph.op_schema("test_ops::echo_attrs")
    assert str(schema) == (
        "test_ops::echo_attrs(Tensor x, *, int i, float f, bool b, str s, int[] ints, float[] floats, "
        "ScalarType dtype, int? maybe=None) -> Tensor"
    )
    assert schema.namespace == "test_ops" and schema.name == "echo_attrs" and schema.overload == ""
    x, i, *_, maybe = schema.arguments
    assert x.is_tensor and not x.kwarg_only and x.type == "Tensor"
    assert not i.is_tensor and i.kwarg_only and not i.has_default
    assert maybe.optional and maybe.has_default and maybe.default is None
    scale = opgraph.op_schema("test_ops::scale")
    assert scale.arguments[1].default == 2.0
    assert [r.name for r in opgraph.op_schema("test_ops::split_sign").returns] == ["positive", "negative"]
    assert opgraph.op_backward("test_ops::scale") == "test_ops::scale_backward"
    assert opgraph.op_backward("test_ops::split_sign") == ""


def test_parse_schema_round_trips():
    text = (
        "ns::name.overload(Tensor x, Tensor? bias=None, *, int stride=1, int[] dims=[0, 1], float alpha=1.0, "
        'bool flag=False, str mode="same", ScalarType? dtype=None) -> (Tensor, Tensor)'
    )
    schema = opgraph.parse_schema(text)
    assert str(schema) == text
    assert schema.qualified_name == "ns::name.overload"
    assert [a.default for a in schema.arguments[1:]] == [None, 1, [0, 1], 1.0, False, "same", None]


def test_bad_schema_points_at_the_offending_character():
    text = "ns::op(Tensor x, int y = ) -> Tensor"
    with pytest.raises(opgraph.Error) as error:
        opgraph.parse_schema(text)
    message = str(error.value)
    assert "invalid schema: expected a default value" in message
    lines = message.splitlines()
    assert lines[1].strip() == text
    assert lines[2].index("^") - lines[1].index("n") == text.index(")")


def test_unknown_op_suggests_close_names(test_ops):
    with pytest.raises(opgraph.Error, match=r"unknown op 'scale'; did you mean: .*test_ops::scale"):
        opgraph.op_schema("scale")
    with pytest.raises(opgraph.Error, match="unknown op 'nothing::here'"):
        opgraph.ops.call("nothing::here")


def test_missing_file():
    with pytest.raises(opgraph.Error, match="load_library: no such file: '/no/such/lib.so'"):
        opgraph.load_library("/no/such/lib.so")


def test_library_without_entry_point(test_packages):
    with pytest.raises(opgraph.Error, match="is not an opgraph op package: it does not export opgraph_package_init"):
        opgraph.load_library(test_packages["not_a_package"])


def test_abi_mismatch_names_both_versions(test_packages):
    before = opgraph.list_ops()
    with pytest.raises(opgraph.Error, match=r"built for op package ABI 2\.0; this opgraph provides ABI 1\.2"):
        opgraph.load_library(test_packages["future_abi"])
    assert opgraph.list_ops() == before


def test_name_clash_leaves_registry_unchanged(test_ops, test_packages):
    before = opgraph.list_ops()
    with pytest.raises(opgraph.Error, match="op 'test_ops::fail' is already registered") as error:
        opgraph.load_library(test_packages["clash"])
    assert "test_ops.cpp" in str(error.value) and "clash.cpp" in str(error.value)
    assert opgraph.list_ops() == before
    assert "test_ops::only_in_clash" not in opgraph.list_ops()


def test_kernel_signature_mismatch_is_reported_at_load(test_packages):
    with pytest.raises(opgraph.Error, match="the kernel takes 0 attributes, the schema declares 1"):
        opgraph.load_library(test_packages["bad_arity"])
    assert "test_bad_arity::op" not in opgraph.list_ops()


def test_num_threads():
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(1)
        assert opgraph.get_num_threads() == 1
        opgraph.set_num_threads(2)
        assert opgraph.get_num_threads() == 2
        with pytest.raises(opgraph.Error, match="expected a count of at least 1, got 0"):
            opgraph.set_num_threads(0)
    finally:
        opgraph.set_num_threads(previous)
