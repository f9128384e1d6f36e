
cross_entropylabels€*I
model.model.embed_tokens.weight€@"model.model.embed_tokens.weight*_
+model.model.layers.0.input_layernorm.weight@"+model.model.layers.0.input_layernorm.weight*q
4model.model.layers.0.post_attention_layernorm.weight@"4model.model.layers.0.post_attention_layernorm.weight*_
+model.model.layers.1.input_layernorm.weight@"+model.model.layers.1.input_layernorm.weight*q
4model.model.layers.1.post_attention_layernorm.weight@"4model.model.layers.1.post_attention_layernorm.weight*7
model.model.norm.weight@"model.model.norm.weight*
val_113@@"val_113*
val_120@ "val_120*
val_127@ "val_127*
val_210@@"val_210*
val_215@€"val_215*
val_217@€"val_217*
val_218€@"val_218*
val_223@@"val_223*
val_230@ "val_230*
val_237@ "val_237*
val_316@@"val_316*
val_321@€"val_321*
val_323@€"val_323*
val_324€@"val_324*
val_329@€"val_329