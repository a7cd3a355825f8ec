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

const char *upper_name(verdict v)
{
	switch (v) {
	case verdict::pass: return "PASS";
	case verdict::fail: return "FAIL";
	case verdict::skip: return "SKIP";
	case verdict::error: return "ERROR";
	}
	return "ERROR";
}

verdict verdict_of(std::string_view text)
{
	for (verdict v : {verdict::pass, verdict::fail, verdict::skip})
		if (text == name(v))
			return v;
	return verdict::error;
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
