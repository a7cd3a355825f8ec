// SPDX-License-Identifier: GPL-2.0
#include "pin_table.hpp"

namespace pinmatrix {

namespace {

using enum page_at;
using enum longterm_answer;
using enum pin_outcome;
using enum first_pin;

// Every row's expectation is the contract, the same on every kernel the suite
// runs: a version range where some releases broke it is a regression, named
// in kernel_rules.cpp, not an expected outcome.
constexpr const char *every = "every kernel";

// Within a placement the seed's cases come first, A-D in order, then the
// other rungs of the ladder; restricted rows before ordinary ones (filling
// memory to reach ordinary pages must not starve restricted cases). A
// source that cannot fill a seed slot with a pin of its own (a GPU driver
// has no known long-term pin for C; io_uring no short-term one for B and D)
// has the module's pin there, and the module's other pin as a rung.
const std::vector<pin_row> table = {
	// source     id   page        first pin           1.must  2.first     3.holds  expected     kernels
	//                                                  migrate long-term   a ref
	{"module",   "A", restricted, none,              true,  no,       false, migrate_ok, every},
	{"module",   "B", restricted, foll_pin,          true,  no,       true,  enomem,     every},
	{"module",   "C", restricted, foll_pin_longterm, true,  yes,      true,  ok_no_move, every},
	{"module",   "",  restricted, mlock,             true,  no,       false, migrate_ok, every},
	{"module",   "",  restricted, gup_ref,           true,  no,       true,  enomem,     every},
	{"module",   "D", ordinary,   foll_pin,          false, no,       true,  ok,         every},
	{"module",   "",  ordinary,   none,              false, no,       false, ok,         every},
	{"module",   "",  ordinary,   mlock,             false, no,       false, ok,         every},
	{"module",   "",  ordinary,   gup_ref,           false, no,       true,  ok,         every},
	{"module",   "",  ordinary,   foll_pin_longterm, false, yes,      true,  ok,         every},

	{"io_uring", "A", restricted, none,              true,  no,       false, migrate_ok, every},
	{"io_uring", "B", restricted, foll_pin,          true,  no,       true,  enomem,     every},
	{"io_uring", "C", restricted, io_uring,          true,  yes,      true,  ok_no_move, every},
	{"io_uring", "",  restricted, foll_pin_longterm, true,  yes,      true,  ok_no_move, every},
	{"io_uring", "D", ordinary,   foll_pin,          false, no,       true,  ok,         every},
	{"io_uring", "",  ordinary,   none,              false, no,       false, ok,         every},
	{"io_uring", "",  ordinary,   io_uring,          false, yes,      true,  ok,         every},
	{"io_uring", "",  ordinary,   foll_pin_longterm, false, yes,      true,  ok,         every},

	{"cuda",     "A", restricted, none,              true,  no,       false, migrate_ok,  every},
	{"cuda",     "B", restricted, cuda_register,     true,  observed, true,  by_contract, every},
	{"cuda",     "C", restricted, foll_pin_longterm, true,  yes,      true,  ok_no_move,  every},
	{"cuda",     "",  restricted, cudart_register,   true,  observed, true,  by_contract, every},
	{"cuda",     "",  restricted, foll_pin,          true,  no,       true,  enomem,      every},
	{"cuda",     "D", ordinary,   cuda_register,     false, observed, true,  ok,          every},
	{"cuda",     "",  ordinary,   none,              false, no,       false, ok,          every},
	{"cuda",     "",  ordinary,   cudart_register,   false, observed, true,  ok,          every},
	// The driver allocates the page: its placement is the driver's.
	{"cuda",     "",  ordinary,   cudart_host_alloc, false, observed, true,  ok,          every},
	{"cuda",     "",  ordinary,   foll_pin,          false, no,       true,  ok,          every},
	{"cuda",     "",  ordinary,   foll_pin_longterm, false, yes,      true,  ok,          every},

	// --no-module: what the stock kernel offers a node that loads no
	// out-of-tree module (Secure Boot). B and D: a pipe's GUP reference;
	// the short-term pin of I/O: an O_DIRECT write held in the kernel.
	{"stock",    "A", restricted, none,              true,  no,       false, migrate_ok, every},
	{"stock",    "B", restricted, vmsplice,          true,  no,       true,  enomem,     every},
	{"stock",    "C", restricted, io_uring,          true,  yes,      true,  ok_no_move, every},
	{"stock",    "",  restricted, mlock,             true,  no,       false, migrate_ok, every},
	{"stock",    "",  restricted, direct_write,      true,  no,       true,  enomem,     every},
	{"stock",    "D", ordinary,   vmsplice,          false, no,       true,  ok,         every},
	{"stock",    "",  ordinary,   none,              false, no,       false, ok,         every},
	{"stock",    "",  ordinary,   mlock,             false, no,       false, ok,         every},
	{"stock",    "",  ordinary,   direct_write,      false, no,       true,  ok,         every},
	{"stock",    "",  ordinary,   io_uring,          false, yes,      true,  ok,         every},

	{"hip",      "A", restricted, none,              true,  no,       false, migrate_ok,  every},
	{"hip",      "B", restricted, hip_register,      true,  observed, true,  by_contract, every},
	{"hip",      "C", restricted, foll_pin_longterm, true,  yes,      true,  ok_no_move,  every},
	{"hip",      "",  restricted, foll_pin,          true,  no,       true,  enomem,      every},
	{"hip",      "D", ordinary,   hip_register,      false, observed, true,  ok,          every},
	{"hip",      "",  ordinary,   none,              false, no,       false, ok,          every},
	{"hip",      "",  ordinary,   foll_pin,          false, no,       true,  ok,          every},
	{"hip",      "",  ordinary,   foll_pin_longterm, false, yes,      true,  ok,          every},
};

} // namespace

const std::vector<pin_row> &pin_table() { return table; }

std::string_view summary(pin_outcome o)
{
	switch (o) {
	case migrate_ok: return "migrate, ok";
	case enomem: return "ENOMEM";
	case ok_no_move: return "ok, no move";
	case ok: return "ok";
	case by_contract: return "ENOMEM (R535-style) | ok, no move (R555-style)";
	}
	return "?";
}

std::string_view name(page_at w) { return w == restricted ? "restricted" : "ordinary"; }

std::string_view name(longterm_answer a) { return a == yes ? "yes" : a == no ? "no" : "observed"; }

} // namespace pinmatrix
