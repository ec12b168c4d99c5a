"""The reviewed list of ONNX node tests that use only operators vtalab converts and are
still refused: each refusal must be the clear error named here (a fragment of its message)
for the reason given. A case listed here that starts to pass, or fails in another way,
fails the suite: keep this list exact."""

_OLD_OPSET = ("opset must be 13..", "an opset before 13: vtalab imports opsets 13 to the newest "
                                    "the installed onnx defines")
_TRAINING = ("training", "training mode: random dropout masks / batch statistics are not an "
                         "inference graph")
_INDICES = ("no Indices", "MaxPool's second output (argmax indices) is not implemented")
_STRING = ("dtype of input", "string tensors: vtalab compiles numeric tensors only")
_DOMAIN = ("domain must be the default ONNX domain", "operators of the ai.onnx.preview domain")
_SEQUENCE = ("tensors only", "sequence / optional values: vtalab compiles tensors only")

_GROUPS = {
    _OLD_OPSET: [f"test_{op}{shape}" for op in ("and", "or", "xor")
                 for shape in ("2d", "3d", "4d", "_bcast3v1d", "_bcast3v2d", "_bcast4v2d",
                               "_bcast4v3d", "_bcast4v4d")]
    + ["test_not_2d", "test_not_3d", "test_not_4d", "test_dropout_default_old",
       "test_dropout_random_old", "test_qlinearconv", "test_dynamicquantizelinear_expanded",
       "test_dynamicquantizelinear_max_adjusted_expanded",
       "test_dynamicquantizelinear_min_adjusted_expanded"],
    _TRAINING: ["test_batchnorm_epsilon_training_mode", "test_batchnorm_example_training_mode",
                "test_training_dropout", "test_training_dropout_default",
                "test_training_dropout_default_mask", "test_training_dropout_mask"],
    _INDICES: ["test_maxpool_with_argmax_2d_precomputed_pads",
               "test_maxpool_with_argmax_2d_precomputed_strides"],
    _STRING: ["test_equal_string", "test_equal_string_broadcast"],
    _DOMAIN: [f"test_flexattention_{kind}expanded_ver26" for kind in (
        "causal_mask_", "diff_head_sizes_", "double_", "", "fp16_", "gqa_", "prob_mod_",
        "relative_positional_", "scaled_", "score_mod_", "soft_cap_")],
    _SEQUENCE: ["test_identity_opt", "test_identity_sequence"],
}

#: test name -> (fragment of the refusal message, reason)
EXPECTED_REFUSALS = {name: group for group, names in _GROUPS.items() for name in names}
