// SPDX-License-Identifier: GPL-2.0
#include "odp_data_path.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "byte_pattern.hpp"
#include "mapping.hpp"
#include "placement.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix::pinner_cases {

using nlohmann::json;

namespace {

constexpr size_t packet = 1024;	// rxe's path MTU on the loopback queue pairs

struct odp_transfer {
	const char *what;
	transfer_op op;
	size_t mr_start;	// where the MR starts in its buffer
	size_t at;		// where the transfer lands, from the buffer's start
	size_t length;
	uint32_t needs;		// IBV_ODP_SUPPORT_* of rc_odp_caps
};

const odp_transfer transfers[] = {
	{"RDMA WRITE of 1 KiB at offset 2048 (one packet inside a page)", transfer_op::rdma_write, 0, 2048, 1024,
	 IBV_ODP_SUPPORT_WRITE},
	{"RDMA READ of 1 KiB at offset 2048", transfer_op::rdma_read, 0, 2048, 1024, IBV_ODP_SUPPORT_READ},
	{"RDMA WRITE of 4 KiB at offset 0 (four packets)", transfer_op::rdma_write, 0, 0, 4096,
	 IBV_ODP_SUPPORT_WRITE},
	{"RDMA WRITE of 1 KiB at offset 3584 (across a page boundary)", transfer_op::rdma_write, 0, 3584, 1024,
	 IBV_ODP_SUPPORT_WRITE},
	{"RDMA READ of 4 KiB at offset 1024 (four packets over two pages)", transfer_op::rdma_read, 0, 1024, 4096,
	 IBV_ODP_SUPPORT_READ},
	{"SEND of 1 KiB received at offset 2048", transfer_op::send, 0, 2048, 1024, IBV_ODP_SUPPORT_RECV},
	{"RDMA WRITE of 1 KiB at offset 2048, into an MR that starts at byte 1000", transfer_op::rdma_write, 1000,
	 2048, 1024, IBV_ODP_SUPPORT_WRITE},
	{"ATOMIC FETCH_AND_ADD at offset 2056", transfer_op::fetch_add, 0, 2056, 8, IBV_ODP_SUPPORT_ATOMIC},
	{"ATOMIC CMP_AND_SWP at offset 3000", transfer_op::cmp_swap, 0, 3000, 8, IBV_ODP_SUPPORT_ATOMIC},
};

constexpr size_t buffer_pages = 3;
constexpr size_t mr_pages = 2;
constexpr uint64_t add = 0x0101010101010101ULL, swap = 0x5a5a5a5a5a5a5a5aULL;

// Where n bytes are in a buffer: their offset, or -1.
long find(const std::vector<std::byte> &in, const std::byte *bytes, size_t n)
{
	const auto it = std::search(in.begin(), in.end(), bytes, bytes + n);
	return it == in.end() ? -1 : long(it - in.begin());
}

struct buffers {
	std::vector<std::byte> remote, local;	// the MR's buffer, the other end's
};

// What each side holds after t went right, from what they held before.
buffers expected(const odp_transfer &t, const buffers &before)
{
	buffers want = before;
	const size_t at = t.at;
	uint64_t old = 0;
	switch (t.op) {
	case transfer_op::rdma_write:
	case transfer_op::send:
		std::copy_n(before.local.begin() + long(at), t.length, want.remote.begin() + long(at));
		break;
	case transfer_op::rdma_read:
		std::copy_n(before.remote.begin() + long(at), t.length, want.local.begin() + long(at));
		break;
	case transfer_op::fetch_add:
	case transfer_op::cmp_swap: {
		std::memcpy(&old, before.remote.data() + at, 8);
		const uint64_t now = t.op == transfer_op::fetch_add ? old + add : swap;
		std::memcpy(want.remote.data() + at, &now, 8);
		std::memcpy(want.local.data() + at, &old, 8);
		break;
	}
	}
	return want;
}

// Per packet of a transfer that went wrong: where it landed (a write, a
// send) or what it read (a read), by its bytes.
json explain_packets(const odp_transfer &t, const buffers &before, const buffers &after)
{
	const bool inbound = t.op == transfer_op::rdma_write || t.op == transfer_op::send;
	std::string detail;
	bool misplaced = false;
	for (size_t k = 0; k < t.length; k += packet) {
		const size_t n = std::min(packet, t.length - k), at = t.at + k;
		const long found = inbound ? find(after.remote, before.local.data() + at, n)
					   : find(before.remote, after.local.data() + at, n);
		detail += " [" + std::to_string(at) + ": ";
		if (found == long(at))
			detail += "ok]";
		else if (found >= 0) {
			detail += std::string(inbound ? "landed at " : "read the bytes at ") + std::to_string(found) + "]";
			misplaced = true;
		} else
			detail += std::string(inbound ? "lost" : "read bytes from nowhere in the MR") + "]";
	}
	return {{"detail", "per packet at its offset:" + detail}, {"misplaced", misplaced}};
}

// An atomic that went wrong: the words of the MR's buffer that changed.
json explain_atomic(const odp_transfer &t, const buffers &before, const buffers &after)
{
	std::vector<std::string> changed;
	bool elsewhere = false;
	for (size_t w = 0; w + 8 <= before.remote.size(); w += 8)
		if (std::memcmp(before.remote.data() + w, after.remote.data() + w, 8)) {
			changed.push_back(std::to_string(w));
			elsewhere = elsewhere || w != (t.at & ~size_t(7));
		}
	return {{"detail", "the 8 bytes at offset " + std::to_string(t.at) + " are not the atomic's result; words "
			   "changed at offsets: " + (changed.empty() ? "none" : join(changed, ", "))},
		{"misplaced", elsewhere}};
}

// One transfer through an MR of the given access, on fresh buffers.
json run_transfer(const verbs_device &dev, const odp_transfer &t, int access)
{
	const size_t ps = page_size(), size = buffer_pages * ps;
	mapping remote = mapping::anonymous(size, true), local = mapping::anonymous(size, true);
	buffers before{pattern(0x0d90 + t.at, size), pattern(0x10ca1 + t.at, size)};
	std::memcpy(remote.data(), before.remote.data(), size);
	std::memcpy(local.data(), before.local.data(), size);
	registration rmr = register_memory(dev, remote.data() + t.mr_start, mr_pages * ps, access);
	registration lmr = register_memory(dev, local.data(), size, IBV_ACCESS_LOCAL_WRITE);
	if (!rmr.mr || !lmr.mr)
		return {{"same", false}, {"step", "registration"},
			{"detail", "ibv_reg_mr " + errno_name(rmr.mr ? lmr.err : rmr.err)}};
	// Its own queue pairs: an error completion leaves a queue pair in error.
	auto qp = loopback_qp::create(dev);
	uint64_t compare = 0;
	std::memcpy(&compare, before.remote.data() + t.at, 8);
	const transfer_request req{t.op,		    lmr.mr.get(), local.data() + t.at, t.length, rmr.mr.get(),
				   remote.data() + t.at, t.op == transfer_op::fetch_add ? add : compare, swap};
	if (int ret = qp.transfer(req, std::chrono::seconds(5)))
		return {{"same", false}, {"step", "completion"},
			{"detail", std::string(name(t.op)) + ": " + errno_name(-ret) +
					   (ret == -EIO ? " (" + std::string(ibv_wc_status_str(
								     ibv_wc_status(qp.last_wc_status()))) + ")" : "")}};
	buffers after{std::vector<std::byte>(remote.data(), remote.data() + size),
		      std::vector<std::byte>(local.data(), local.data() + size)};
	const buffers want = expected(t, before);
	if (after.remote == want.remote && after.local == want.local)
		return {{"same", true}, {"detail", "landed where it was sent, the rest of both buffers as it was"}};
	json wrong = t.length == 8 ? explain_atomic(t, before, after) : explain_packets(t, before, after);
	wrong["same"] = false;
	return wrong;
}

} // namespace

json odp_data_path(const verbs_device &dev, uint32_t rc_odp_caps)
{
	json out = json::array();
	for (const auto &t : transfers) {
		json one = {{"transfer", t.what},
			    {"ordinary", run_transfer(dev, t, registration_access | IBV_ACCESS_REMOTE_ATOMIC)}};
		if (rc_odp_caps & t.needs)
			one["odp"] = run_transfer(dev, t,
						  registration_access | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND);
		else
			one["odp"] = {{"offered", false}, {"detail", "the device's rc_odp_caps do not offer it"}};
		out.push_back(one);
	}
	return {{"transfers", out}};
}

} // namespace pinmatrix::pinner_cases
