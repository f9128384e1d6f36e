//===- GeminiOps.td - Gemini's chunk moves ------------------*- tablegen -*-===//
//
// The ops of tesselc --plugin gemini (docs/plugins.md#gemini): parameters
// packed into chunks that live in host memory are copied into device
// memory ahead of their use. Written by -tessel-gemini-placement after
// partitioning; they have no sharding or gradient rule.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_GEMINI_OPS_TD
#define TESSEL_GEMINI_OPS_TD

def Tessel_ChunkFetchOp : Tessel_Op<"chunk_fetch">,
    Tessel_Instruction<170, "chunk", [Tessel_RtAttr<"chunk">]> {
  let summary = "Copies a chunk of parameters from host into device memory";
  let description = [{
    Gemini's move of a chunk held in host memory into device memory, ahead
    of the ops that read it: each result is a copy of the operand at the
    same position (a parameter of chunk `chunk`, in its state buffer), in a
    buffer of the step's arena (device memory), live until its last reader
    (the chunk's eviction: the host copy stays authoritative, so nothing is
    copied back). The values are unchanged. `-tessel-gemini-placement`
    writes one per chunk and phase (forward, backward) where the chunk is
    placed in host memory; readers in that phase read the results.

    ```mlir
    %d:2 = tessel.chunk_fetch %w0, %w1 {chunk = 3 : i64} : (tensor<64x32xf32>, tensor<32xf32>) -> (tensor<64x32xf32>, tensor<32xf32>)
    ```

    **Constraints**

    * (C1) at least one operand.
    * (C2) as many results as operands, each of its operand's type.
    * (C3) `chunk` >= 0.
  }];
  let arguments = (ins Variadic<Tessel_AnyTensor>:$params, I64Attr:$chunk);
  let results = (outs Variadic<Tessel_AnyTensor>:$copies);
  let assemblyFormat = "$params attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TESSEL_GEMINI_OPS_TD
