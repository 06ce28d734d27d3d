// One row times a matrix (batch-1 inference, a recurrent step), or a few
// rows (the decode step of a batch of sequences): products that only have
// to stream the matrix from memory once.
#pragma once

#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/engines/weight_panels.h"

namespace opgraph::kernels {

// Computes a float32 product whose a and dst rows are contiguous: one row,
// or up to kMaxPanelRows (kMaxBFloat16PanelRows in a Session of
// Precision::BFloat16; panel_tiles.h) where w is a Session's weight and the
// CPU runs add_panel_rows. a stays float32 in either precision. In a
// Session that quantizes its weights (WeightQuantization), w's panels hold
// int8 or int4 (Dot panels, multiplied by a's rows quantized too, where
// runs_on_dot_panels) and any number of rows runs on them, as it does where
// `any_rows` is set (or the Session forces the panels). Returns false
// (computing nothing) where it does not run the product.
bool few_rows_times_matrix(const KernelContext& context, const Product& p, bool any_rows = false);

// Whether a Session's quantized products of k inputs multiply int8
// activations on Dot panels (dot_panel_tiles.h): where the Session
// quantizes its activations (WeightQuantization's int8_activations), the
// CPU has VNNI and k is a multiple of 32. Elsewhere their activations stay
// float32.
bool runs_on_dot_panels(const KernelContext& context, int64_t k);

// Computes a float32 product of any number of rows whose w (p.w unread) is a
// weight quantized ahead of time, on its integer panels, where the CPU runs
// add_panel_rows and a and dst rows are contiguous. Returns false
// (computing nothing) elsewhere.
bool quantized_rows_product(const KernelContext& context, const Product& p, const QuantizedRows& w);

}  // namespace opgraph::kernels
