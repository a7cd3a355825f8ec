// SPDX-License-Identifier: GPL-2.0
#pragma once

// One capability in this thread's effective set, through capget/capset (no
// libcap): the permitted set keeps it, so it can be raised again. What the
// kernel checks at the moment of a call (capable() in ib_umem_get(), in
// drm_file_alloc() when a DRM node is opened) sees the effective set.

namespace pinmatrix {

// CAP_* on (raise) or off (drop) in the effective set; 0 or -errno.
int set_effective_cap(int cap, bool on);

// Drops cap from the effective set for its lifetime and raises it again
// after. ok() is false (and nothing changed) when the drop failed.
class effective_cap_dropped {
public:
	explicit effective_cap_dropped(int cap) : cap_(cap), error_(set_effective_cap(cap, false)) {}
	~effective_cap_dropped()
	{
		if (!error_)
			set_effective_cap(cap_, true);
	}
	effective_cap_dropped(const effective_cap_dropped &) = delete;
	effective_cap_dropped &operator=(const effective_cap_dropped &) = delete;

	bool ok() const { return !error_; }
	int error() const { return error_; }	// -errno of the drop

private:
	int cap_;
	int error_;
};

} // namespace pinmatrix
