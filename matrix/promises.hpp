// SPDX-License-Identifier: GPL-2.0
#pragma once

// What the suite promises to check, as data: one row per promise of the two
// contracts, with the sentence it comes from and the cases that check it,
// and one row per mutant the suite carries (a fault bit of the UALink model,
// a kernel patch under matrix/patches/) with the promises it breaks and the
// cases that must FAIL under it. A promise is "proved" by a mutant that
// breaks it and is caught by one of its cases: the proof that the case can
// fail. `pinmatrix promises` prints both tables; report.html shows, per
// promise, the cases of the run that checked it.
//
// Case ids are strings here (matrix/ sits below the suites): a unit test
// holds every id against the suites' tables, every fault bit against the
// model's uapi and every patch against matrix/patches/.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pinmatrix {

enum class contract { pin, ualink };
const char *name(contract c);	// "pin", "ualink"

struct promise {
	std::string_view id;		// "<contract>/<kebab-case>", unique
	contract of;
	std::string_view source;	// where: "seed 1, section 11", "v2 doc", "posted ioctl", "kernel rule"
	std::string_view text;		// the sentence, quoted where it is a quote
	std::vector<std::string_view> cases;	// case ids that check it
};

enum class mutant_kind {
	model_fault,	// a bit of debugfs ualink_sim/faults (kmod/uapi/ualink_sim.h)
	kernel_patch,	// a patch of the suite's kernel (matrix/patches/)
};
const char *name(mutant_kind k);	// "model fault bit", "kernel patch"

struct mutant {
	std::string_view name;		// "flags-unchecked", "1aaf8c122918"
	mutant_kind kind;
	uint64_t bit;			// model_fault: UALINK_SIM_FAULT_*; else 0
	// kernel_patch: the files in matrix/patches/ (one per kernel series it
	// applies to) and, for the mutant kernel's, the boot parameter
	// pinmatrix_mutant=N that turns it on (0: the patch alone is the mutant).
	std::vector<std::string_view> patches;
	int boot_value;
	std::string_view deviation;	// what it breaks, for people
	std::vector<std::string_view> breaks;		// promise ids
	std::vector<std::string_view> caught_by;	// case ids that must FAIL under it

	std::string id() const;		// "model:flags-unchecked", "kernel:1aaf8c122918"
};

// The mutant kernel's boot parameter, on the kernel command line.
inline constexpr std::string_view mutant_boot_parameter = "pinmatrix_mutant";

const std::vector<promise> &promise_table();
const std::vector<mutant> &mutant_table();

// The mutants that break p and are caught by one of its cases.
std::vector<const mutant *> proofs_of(const promise &p);

} // namespace pinmatrix
