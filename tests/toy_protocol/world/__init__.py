"""The toy protocol's executor world (issue 28's done-when): a harness that runs the fixture
tree's own toy cache and controller (tree/sglang/srt/) under the executor's baton, its pack
(registered with the one `world=` line on the toy's descriptor), its refinement mapping for the
conformance check, and its SGLang mapping (registered with `mappings.register(MAPPING)`)."""
