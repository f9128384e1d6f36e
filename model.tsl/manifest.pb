tesselc
dp *E
rank0.program.pb½¼‚ª%
rank0.weights.safetensorsŒ®Ç×ÚÙ*G
rank1.program.pb¿¼ù²ç%
rank1.weights.safetensorsŒ®öò®±:
training.pbÓ„·£
}ríË	