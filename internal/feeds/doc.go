// Package feeds makes what verify and bench feed a model and its stages: seeded random
// inputs in ranges that keep a model's indices and masks valid (Ranges, Random, Tensor),
// batches of them (Batch), and the sizes of the symbolic dimensions a manifest's stages kept,
// from the user's input files, shapes and dims and the sizes the plan recorded (Bind).
package feeds
