// What a primitive does with each slice, by name: the template argument of every primitive's
// inner loop (primitives_*.h, reduceCopy in reduce_ops.h), so each combination compiles to its
// own branch-free loop and no call site passes six booleans in an order it must remember.
//
// Computes nothing. Introduced in lesson 03 (docs/lessons/03-pipelining.md) with the primitives.
// Memory-ordering contract: none (a compile-time description).
#pragma once

namespace baton {

struct Moves {
  bool recv = false;    // read the receive slot (data reduced upstream)
  bool send = false;    // fill the send slot
  bool src = false;     // read the user's source
  bool dst = false;     // write the user's destination
  bool preSrc = false;  // apply the operator's pre-op to the source (PreMulSum)
  bool post = false;    // apply the post-op to what is written (ncclAvg's division)
};

// The single-rank case and the start of a reduction: dst = post(pre(src)).
constexpr Moves kOwnInputToOutput{.src = true, .dst = true, .preSrc = true, .post = true};

}  // namespace baton
