// SPDX-License-Identifier: GPL-2.0
#include "verdict.hpp"

namespace pinmatrix {

const char *name(verdict v)
{
	switch (v) {
	case verdict::pass: return "pass";
	case verdict::fail: return "fail";
	case verdict::skip: return "skip";
	case verdict::error: return "error";
	}
	return "error";
}

verdict worst(verdict a, verdict b)
{
	auto rank = [](verdict v) {
		switch (v) {
		case verdict::error: return 3;
		case verdict::fail: return 2;
		case verdict::pass: return 1;
		case verdict::skip: return 0;
		}
		return 3;
	};
	return rank(a) >= rank(b) ? a : b;
}

} // namespace pinmatrix
