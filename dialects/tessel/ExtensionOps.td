//===- ExtensionOps.td - the op of plugins' custom ops -----*- tablegen -*-===//
//
// One op for every op a plugin adds (include/tessel/Extension/Op.h): its
// properties are looked up by its target's name in the extension registry
// (runtime/extension), as XLA's custom_call and ONNX Runtime's custom ops do.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXTENSION_OPS_TD
#define TESSEL_EXTENSION_OPS_TD

def Tessel_CustomCallOp : Tessel_ComputeOp<"custom_call", "buildCustomCallRule">,
    Tessel_Instruction<160, "custom", [Tessel_RtAttr<"target">]>,
    Tessel_GradientFrom<"buildCustomCallGradient"> {
  let summary = "An op of a plugin, by name";
  let description = [{
    The custom op `target`, registered by a plugin (docs/extending.md), on
    `inputs` with the attributes `attrs`. Its sharding rule, gradient rule and
    kernel are the ones the plugin registered under that name; without a
    sharding rule every dim stays replicated.

    ```mlir
    %1 = tessel.custom_call "example.FancyGelu"(%0) {attrs = {alpha = 1.702 : f32}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) `target` is a registered custom op (load its plugin).
    * (C2) the result types are the ones its type rule gives the operands.
  }];
  let arguments = (ins Variadic<Tessel_AnyTensor>:$inputs, StrAttr:$target,
                       OptionalAttr<DictionaryAttr>:$attrs);
  let results = (outs Variadic<Tessel_AnyTensor>:$outputs);
  let assemblyFormat = [{
    $target `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

#endif // TESSEL_EXTENSION_OPS_TD
