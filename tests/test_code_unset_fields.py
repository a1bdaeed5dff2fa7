"""A field the world never set on an object it builds with `__new__` is not modelled where the
tree's code reads it, even inside the path's own `except Exception` (rt/unset_fields.py); the
path's own probes (`getattr` with a default, `hasattr`) and the worlds' reads still see an
AttributeError."""

from __future__ import annotations

import importlib.util

import pytest

from prefetch_check.model.code import CodeConfig, check_tree
from prefetch_check.model.code.rt.unset_fields import guard
from prefetch_check.model.code.stand_ins.errors import NotModelled
from tests.test_code_executor import LIMITS, clean, edited, not_modelled_message, release

TREE_CODE = '''
class Controller:
    def swallowed(self):
        try:
            return self.never_set
        except Exception:
            return "swallowed"

    def probed(self):
        return getattr(self, "never_set", "default"), hasattr(self, "never_set")

    def through_a_property(self):
        return self.flag

    @property
    def flag(self):
        return not self.config_never_set
'''


@pytest.fixture
def controller(tmp_path):
    """A class of a file below a tree root, built as the worlds build theirs (`__new__`)."""
    path = tmp_path / "srt" / "controller.py"
    path.parent.mkdir()
    path.write_text(TREE_CODE)
    spec = importlib.util.spec_from_file_location("tree_controller", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = module.Controller
    guard(cls, (str(tmp_path / "srt"),))
    return cls.__new__(cls)


def test_a_read_the_path_would_swallow_is_not_modelled_with_its_line(controller):
    with pytest.raises(NotModelled) as raised:
        controller.swallowed()
    assert raised.value.callee.startswith("Controller.never_set, a field the world never set")
    assert raised.value.site == "controller.py:5"


def test_the_paths_own_probes_still_see_the_field_missing(controller):
    assert controller.probed() == ("default", False)


def test_a_field_a_property_reads_is_named_not_the_property(controller):
    with pytest.raises(NotModelled) as raised:
        controller.through_a_property()
    assert raised.value.callee.startswith("Controller.config_never_set") and raised.value.site == "controller.py:17"


def test_a_read_from_outside_the_tree_is_an_attribute_error(controller):
    with pytest.raises(AttributeError):
        controller.never_set  # noqa: B018 (this file is not below the tree's root)
    controller.never_set = 1
    assert controller.swallowed() == 1


def test_a_release_reading_a_field_no_world_sets_is_refused_not_judged_clean(tmp_path):
    """0.5.23's prefetch thread catches every exception of its storage query as 0 hits: a field the
    world never set, read there, would have been a clean run of a path that is not the release's."""
    srt = release("0.5.23")
    assert clean(check_tree(srt, CodeConfig(ranks=1), LIMITS))
    edit = edited(tmp_path, srt, "mem_cache/hybrid_cache/hybrid_cache_controller.py",
                  "    def _storage_hit_query(self, operation) -> tuple[list[str], int]:\n",
                  "    def _storage_hit_query(self, operation) -> tuple[list[str], int]:\n"
                  "        assert self.storage_query_budget > 0\n")
    message = not_modelled_message(edit, CodeConfig(ranks=1))
    assert message.startswith("not modelled: HybridCacheController.storage_query_budget, a field the world never set")
    assert message.endswith("at mem_cache/hybrid_cache/hybrid_cache_controller.py:1420")
