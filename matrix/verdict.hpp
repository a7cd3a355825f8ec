// SPDX-License-Identifier: GPL-2.0
#pragma once

// The verdict every case of every suite ends with, exactly one per case
// (a pin case's judge: cases/pin/pin_judge.hpp).

namespace pinmatrix {

enum class verdict { pass, fail, skip, error };
const char *name(verdict v);
// KernelCI order: error > fail > pass > skip.
verdict worst(verdict a, verdict b);

} // namespace pinmatrix
