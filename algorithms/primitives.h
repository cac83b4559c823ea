// All three protocols' primitives: include this to write a collective for any protocol P.
// Introduced in lesson 04 (docs/lessons/04-protocols.md).
// Memory-ordering contract: see each protocol's file.
#pragma once

#include "primitives_ll.h"
#include "primitives_ll128.h"
#include "primitives_simple.h"
