// SPDX-License-Identifier: GPL-2.0
/*
 * pinmatrix: hold first pins on user pages with a chosen GUP contract and
 * report where pages live, for the pin causal matrix.
 *
 * A long-term pin (FOLL_LONGTERM, as ib_umem_get() takes) must first migrate
 * a page out of ZONE_MOVABLE or a MIGRATE_CMA pageblock. A short-term pin
 * held before it (FOLL_PIN without FOLL_LONGTERM, or a plain FOLL_GET
 * reference) makes that migration fail. Upstream mm/gup_test.c cannot hold
 * such a first pin across system calls; this module can.
 *
 * Every pin belongs to the file descriptor that took it and is released when
 * that descriptor is closed, also when its process is killed. Pins only ever
 * cover the calling process's own memory (current->mm).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/xarray.h>

#include "pinmatrix.h"

static unsigned long max_pinned_pages = 262144;	/* 1 GiB of 4 KiB pages */
module_param(max_pinned_pages, ulong, 0644);
MODULE_PARM_DESC(max_pinned_pages, "Most pages one open file may hold pinned");

/*
 * Fault injection for the runner's tests: a registration that retries
 * forever, as some kernels' long-term pin path does, stands in the kernel
 * holding its pages. Only SIGKILL ends it, and the pages go with it.
 */
static bool stall_pin_until_killed;
module_param(stall_pin_until_killed, bool, 0600);
MODULE_PARM_DESC(stall_pin_until_killed,
		 "Fault injection: PIN holds its pages and sleeps until its task is killed");

/* Probe in batches so that a scan of hundreds of MiB needs no large buffer. */
#define PROBE_BATCH 256

struct pm_pin {
	u32 id;
	u32 contract;
	u32 flags;
	u64 addr;
	unsigned long npages;
	struct page **pages;
};

struct pm_file {
	struct mutex lock;	/* serialises pins[] and pinned_pages */
	struct xarray pins;	/* id -> struct pm_pin */
	unsigned long pinned_pages;
};

/*
 * The pageblock migratetype, read from the section's pageblock bitmap as
 * get_pfnblock_flags_mask() does: that function is not exported to modules.
 * The layout is stable from 5.x through 6.14; 6.15 reworked pageblock bits.
 */
#if defined(CONFIG_SPARSEMEM) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 15, 0)
#define PM_MT_METHOD PINMATRIX_MT_METHOD_PAGEBLOCK_BITMAP
static int pm_migratetype(unsigned long pfn)
{
	struct mem_section *ms = __pfn_to_section(pfn);
	unsigned long bitidx, word;

	if (!ms || !ms->usage)
		return -1;
	bitidx = ((pfn & (PAGES_PER_SECTION - 1)) >> pageblock_order) *
		 NR_PAGEBLOCK_BITS;
	word = READ_ONCE(ms->usage->pageblock_flags[bitidx / BITS_PER_LONG]);
	return (word >> (bitidx % BITS_PER_LONG)) & MIGRATETYPE_MASK;
}
#else
#define PM_MT_METHOD PINMATRIX_MT_METHOD_NONE
static int pm_migratetype(unsigned long pfn)
{
	return -1;
}
#endif

static u8 pm_uapi_migratetype(int mt)
{
	switch (mt) {
	case MIGRATE_UNMOVABLE:
		return PINMATRIX_MT_UNMOVABLE;
	case MIGRATE_MOVABLE:
		return PINMATRIX_MT_MOVABLE;
	case MIGRATE_RECLAIMABLE:
		return PINMATRIX_MT_RECLAIMABLE;
	case MIGRATE_HIGHATOMIC:
		return PINMATRIX_MT_HIGHATOMIC;
#ifdef CONFIG_CMA
	case MIGRATE_CMA:
		return PINMATRIX_MT_CMA;
#endif
#ifdef CONFIG_MEMORY_ISOLATION
	case MIGRATE_ISOLATE:
		return PINMATRIX_MT_ISOLATE;
#endif
	default:
		return PINMATRIX_MT_UNKNOWN;
	}
}

static u8 pm_uapi_zone(struct page *page)
{
	switch (page_zonenum(page)) {
#ifdef CONFIG_ZONE_DMA
	case ZONE_DMA:
		return PINMATRIX_ZONE_DMA;
#endif
#ifdef CONFIG_ZONE_DMA32
	case ZONE_DMA32:
		return PINMATRIX_ZONE_DMA32;
#endif
	case ZONE_NORMAL:
		return PINMATRIX_ZONE_NORMAL;
#ifdef CONFIG_HIGHMEM
	case ZONE_HIGHMEM:
		return PINMATRIX_ZONE_HIGHMEM;
#endif
	case ZONE_MOVABLE:
		return PINMATRIX_ZONE_MOVABLE;
#ifdef CONFIG_ZONE_DEVICE
	case ZONE_DEVICE:
		return PINMATRIX_ZONE_DEVICE;
#endif
	default:
		return PINMATRIX_ZONE_UNKNOWN;
	}
}

static void pm_describe(struct page *page, struct pinmatrix_page *out)
{
	unsigned long pfn = page_to_pfn(page);
	int mt = pm_migratetype(pfn);
	bool pinnable;

	out->pfn = pfn;
	out->zone = pm_uapi_zone(page);
	out->migratetype = mt < 0 ? PINMATRIX_MT_UNKNOWN : pm_uapi_migratetype(mt);
	out->flags = PINMATRIX_PAGE_PRESENT;
	if (mt >= 0)
		out->flags |= PINMATRIX_PAGE_MT_KNOWN;
	if (is_zero_pfn(pfn))
		out->flags |= PINMATRIX_PAGE_ZERO;
	if (folio_maybe_dma_pinned(page_folio(page)))
		out->flags |= PINMATRIX_PAGE_MAYBE_DMA_PINNED;
	/* page_count() includes the reference the probe itself holds */
	out->refcount = page_count(page) - 1;

	/*
	 * The rule of is_longterm_pinnable_page() (6.1), restated because its
	 * CMA branch calls the unexported get_pfnblock_flags_mask().
	 */
	pinnable = out->zone != PINMATRIX_ZONE_MOVABLE &&
		   out->migratetype != PINMATRIX_MT_CMA &&
		   out->migratetype != PINMATRIX_MT_ISOLATE &&
		   out->zone != PINMATRIX_ZONE_DEVICE;
	if (is_zero_pfn(pfn))
		pinnable = true;
	if (pinnable)
		out->flags |= PINMATRIX_PAGE_LONGTERM_PINNABLE;
}

/* Reads the size field every argument struct starts with. */
static int pm_check_size(const void __user *arg, u32 expected)
{
	u32 size;

	if (get_user(size, (const u32 __user *)arg))
		return -EFAULT;
	return size == expected ? 0 : -EINVAL;
}

/* Copies an argument struct in once its size field matches this ABI's. */
static int pm_copy_args(void *req, const void __user *arg, u32 size)
{
	int ret = pm_check_size(arg, size);

	if (ret)
		return ret;
	return copy_from_user(req, arg, size) ? -EFAULT : 0;
}

static int pm_check_range(u64 addr, u64 npages, u64 max_pages)
{
	if (!npages || npages > max_pages || !PAGE_ALIGNED(addr))
		return -EINVAL;
	if (addr + (npages << PAGE_SHIFT) < addr ||
	    !access_ok((void __user *)(unsigned long)addr, npages << PAGE_SHIFT))
		return -EFAULT;
	return 0;
}

static long pm_ioctl_info(struct pm_file *pf, void __user *arg)
{
	struct pinmatrix_info info = { .size = sizeof(info) };
	int ret = pm_check_size(arg, sizeof(info));

	if (ret)
		return ret;
	info.abi_version = PINMATRIX_ABI_VERSION;
	info.mt_method = PM_MT_METHOD;
	info.page_size = PAGE_SIZE;
	info.max_pinned_pages = READ_ONCE(max_pinned_pages);
	mutex_lock(&pf->lock);
	info.pinned_pages = pf->pinned_pages;
	mutex_unlock(&pf->lock);
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

/* What a probe reports for a page it could not get: absent (or not GUP-able). */
static void pm_absent(struct pinmatrix_page *out)
{
	memset(out, 0, sizeof(*out));
	out->zone = PINMATRIX_ZONE_UNKNOWN;
	out->migratetype = PINMATRIX_MT_UNKNOWN;
}

/*
 * The first address in [addr, end) of one VMA whose page table entry is
 * present, or whose entries this walk does not read (huge, bad): end when
 * there is none. Absent means what GUP without faulting finds absent: no
 * page table, a none or a non-present (swap, migration) entry. Runs under
 * mmap_read_lock, which keeps the VMA's page tables from being freed or
 * collapsed into a huge page (both need the lock for write in 6.1).
 */
static unsigned long pm_absent_until(struct mm_struct *mm, unsigned long addr, unsigned long end)
{
	while (addr < end) {
		pgd_t *pgd = pgd_offset(mm, addr);
		unsigned long next = pgd_addr_end(addr, end);
		pte_t *start_pte, *pte;
		spinlock_t *ptl;	/* the PTE page's lock */
		pmd_t *pmd, pmdval;
		p4d_t *p4d;
		pud_t *pud;

		if (pgd_none(READ_ONCE(*pgd))) {
			addr = next;
			continue;
		}
		if (pgd_bad(READ_ONCE(*pgd)))
			return addr;
		p4d = p4d_offset(pgd, addr);
		next = p4d_addr_end(addr, end);
		if (p4d_none(READ_ONCE(*p4d))) {
			addr = next;
			continue;
		}
		if (p4d_bad(READ_ONCE(*p4d)))
			return addr;
		pud = pud_offset(p4d, addr);
		next = pud_addr_end(addr, end);
		if (pud_none(READ_ONCE(*pud))) {
			addr = next;
			continue;
		}
		if (!pud_present(READ_ONCE(*pud)) || pud_leaf(READ_ONCE(*pud)) ||
		    pud_bad(READ_ONCE(*pud)))
			return addr;
		pmd = pmd_offset(pud, addr);
		next = pmd_addr_end(addr, end);
		pmdval = READ_ONCE(*pmd);
		if (pmd_none(pmdval)) {
			addr = next;
			continue;
		}
		if (!pmd_present(pmdval) || pmd_trans_huge(pmdval) || pmd_devmap(pmdval) ||
		    pmd_bad(pmdval))
			return addr;
		start_pte = pte_offset_map_lock(mm, pmd, addr, &ptl);
		pte = start_pte;
		for (; addr < next; addr += PAGE_SIZE, pte++)
			if (pte_present(*pte))
				break;
		pte_unmap_unlock(start_pte, ptl);
		if (addr < next)
			return addr;
	}
	return end;
}

/*
 * How many pages from start (at most max) a probe without PINMATRIX_PROBE_FAULT
 * would report absent: holes between VMAs and absent entries in ordinary
 * VMAs. 0 when unsure; the probe then asks GUP about the page.
 */
static u64 pm_absent_run(struct mm_struct *mm, unsigned long start, u64 max)
{
	const unsigned long end = start + (max << PAGE_SHIFT);
	unsigned long addr = start;

	if (mmap_read_lock_killable(mm))
		return 0;
	while (addr < end) {
		struct vm_area_struct *vma = find_vma(mm, addr);
		unsigned long stop, next;

		if (!vma || vma->vm_start >= end) {
			addr = end;
			break;
		}
		if (vma->vm_start > addr) {
			addr = vma->vm_start;
			continue;
		}
		/* Hugetlb and PFN maps: GUP decides, page by page. */
		if (vma->vm_flags & (VM_HUGETLB | VM_PFNMAP | VM_IO | VM_MIXEDMAP))
			break;
		stop = min(end, vma->vm_end);
		next = pm_absent_until(mm, addr, stop);
		addr = next;
		if (next < stop)
			break;
	}
	mmap_read_unlock(mm);
	return (addr - start) >> PAGE_SHIFT;
}

/* Reports n absent pages at uout; scratch holds PROBE_BATCH entries. */
static int pm_put_absent(struct pinmatrix_page __user *uout, u64 n,
			 struct pinmatrix_page *scratch)
{
	int i;

	for (i = 0; i < PROBE_BATCH; i++)
		pm_absent(&scratch[i]);
	while (n) {
		u64 chunk = min_t(u64, n, PROBE_BATCH);

		if (copy_to_user(uout, scratch, chunk * sizeof(*uout)))
			return -EFAULT;
		uout += chunk;
		n -= chunk;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	return 0;
}

static long pm_ioctl_probe(void __user *arg)
{
	struct pinmatrix_page __user *uout;
	struct pinmatrix_page *batch_out;
	struct pinmatrix_probe req;
	struct page **pages;
	bool short_batch;
	u64 done = 0;
	int ret;

	ret = pm_copy_args(&req, arg, sizeof(req));
	if (ret)
		return ret;
	if (req.flags & ~PINMATRIX_PROBE_FAULT)
		return -EINVAL;
	ret = pm_check_range(req.addr, req.npages, PINMATRIX_PROBE_MAX_PAGES);
	if (ret)
		return ret;
	uout = u64_to_user_ptr(req.pages);
	if (!access_ok(uout, req.npages * sizeof(*uout)))
		return -EFAULT;

	pages = kmalloc_array(PROBE_BATCH, sizeof(*pages), GFP_KERNEL);
	batch_out = kmalloc_array(PROBE_BATCH, sizeof(*batch_out), GFP_KERNEL);
	if (!pages || !batch_out) {
		ret = -ENOMEM;
		goto out_free;
	}

	while (done < req.npages) {
		unsigned long addr = req.addr + (done << PAGE_SHIFT);
		int want = min_t(u64, req.npages - done, PROBE_BATCH);
		int got, i;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		/*
		 * The reference is dropped right away: a probe holds nothing.
		 * FOLL_NOFAULT still takes the slow path that fast GUP leaves to
		 * it (the zero page, special PTEs) but never faults a page in.
		 */
		got = get_user_pages_fast(addr, want,
					  (req.flags & PINMATRIX_PROBE_FAULT) ? 0 : FOLL_NOFAULT,
					  pages);
		if (got < 0)
			got = 0;
		memset(batch_out, 0, PROBE_BATCH * sizeof(*batch_out));
		for (i = 0; i < got; i++) {
			pm_describe(pages[i], &batch_out[i]);
			put_page(pages[i]);
		}
		/* The page after a short batch is absent (or not GUP-able). */
		short_batch = got < want;
		if (short_batch) {
			pm_absent(&batch_out[got]);
			got++;
		}
		if (copy_to_user(uout + done, batch_out, got * sizeof(*uout))) {
			ret = -EFAULT;
			break;
		}
		done += got;
		/*
		 * An absent page is mostly the first of many (memory mapped but
		 * never touched): the rest of the run is reported from one walk
		 * of the page tables instead of a failing GUP call per page.
		 */
		if (short_batch && !(req.flags & PINMATRIX_PROBE_FAULT) && done < req.npages) {
			u64 absent = pm_absent_run(current->mm, req.addr + (done << PAGE_SHIFT),
						   req.npages - done);

			ret = pm_put_absent(uout + done, absent, batch_out);
			if (ret)
				break;
			done += absent;
		}
		cond_resched();
	}
out_free:
	kfree(batch_out);
	kfree(pages);
	return ret;
}

static void pm_release_pin(struct pm_pin *pin)
{
	if (pin->contract == PINMATRIX_CONTRACT_GUP_REF) {
		unsigned long i;

		for (i = 0; i < pin->npages; i++)
			put_page(pin->pages[i]);
	} else {
		unpin_user_pages(pin->pages, pin->npages);
	}
	kvfree(pin->pages);
	kfree(pin);
}

static long pm_take_pages(struct pm_pin *pin)
{
	unsigned int gup_flags = 0;
	long got;

	if (pin->flags & PINMATRIX_PIN_WRITE)
		gup_flags |= FOLL_WRITE;

	switch (pin->contract) {
	case PINMATRIX_CONTRACT_GUP_REF:
		got = get_user_pages_fast(pin->addr, pin->npages, gup_flags,
					  pin->pages);
		break;
	case PINMATRIX_CONTRACT_FOLL_PIN:
		got = pin_user_pages_fast(pin->addr, pin->npages, gup_flags,
					  pin->pages);
		break;
	case PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM:
		got = pin_user_pages_fast(pin->addr, pin->npages,
					  gup_flags | FOLL_LONGTERM, pin->pages);
		break;
	default:
		return -EINVAL;
	}
	if (got < 0) {
		pin->npages = 0;	/* nothing to release */
		return got;
	}
	if (got < pin->npages) {
		/* All or nothing: a partial pin would hide which page failed. */
		pin->npages = got;
		return -EFAULT;
	}
	return 0;
}

/* noinline: a task dump should name where the task is stuck. */
static noinline int pm_stall_until_killed(void)
{
	pr_info("%s[%d]: PIN stalls until the task is killed (stall_pin_until_killed)\n",
		current->comm, task_pid_nr(current));
	while (!fatal_signal_pending(current))
		schedule_timeout_killable(MAX_SCHEDULE_TIMEOUT);
	return -EINTR;
}

static long pm_ioctl_pin(struct pm_file *pf, void __user *arg)
{
	struct pinmatrix_pin req;
	u64 __user *upfns;
	struct pm_pin *pin;
	unsigned long i;
	long ret;

	ret = pm_copy_args(&req, arg, sizeof(req));
	if (ret)
		return ret;
	if (req.flags & ~PINMATRIX_PIN_WRITE)
		return -EINVAL;
	if (req.contract < PINMATRIX_CONTRACT_GUP_REF ||
	    req.contract > PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM)
		return -EINVAL;
	ret = pm_check_range(req.addr, req.npages, INT_MAX);
	if (ret)
		return ret;
	upfns = u64_to_user_ptr(req.pfns);
	if (!access_ok(upfns, req.npages * sizeof(*upfns)))
		return -EFAULT;

	mutex_lock(&pf->lock);
	if (pf->pinned_pages + req.npages > READ_ONCE(max_pinned_pages)) {
		ret = -ENOSPC;
		goto out_unlock;
	}

	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	pin->contract = req.contract;
	pin->flags = req.flags;
	pin->addr = req.addr;
	pin->npages = req.npages;
	pin->pages = kvmalloc_array(req.npages, sizeof(*pin->pages), GFP_KERNEL);
	if (!pin->pages) {
		kfree(pin);
		ret = -ENOMEM;
		goto out_unlock;
	}

	ret = pm_take_pages(pin);
	if (!ret && READ_ONCE(stall_pin_until_killed))
		ret = pm_stall_until_killed();
	if (ret)
		goto out_release;

	for (i = 0; i < pin->npages; i++) {
		if (put_user((u64)page_to_pfn(pin->pages[i]), upfns + i)) {
			ret = -EFAULT;
			goto out_release;
		}
	}

	ret = xa_alloc(&pf->pins, &pin->id, pin, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto out_release;
	req.id = pin->id;
	if (put_user(req.id, &((struct pinmatrix_pin __user *)arg)->id)) {
		xa_erase(&pf->pins, pin->id);
		ret = -EFAULT;
		goto out_release;
	}
	pf->pinned_pages += pin->npages;
	mutex_unlock(&pf->lock);
	return 0;

out_release:
	pm_release_pin(pin);
out_unlock:
	mutex_unlock(&pf->lock);
	return ret;
}

static long pm_ioctl_unpin(struct pm_file *pf, void __user *arg)
{
	struct pinmatrix_unpin req;
	struct pm_pin *pin;
	int ret;

	ret = pm_copy_args(&req, arg, sizeof(req));
	if (ret)
		return ret;

	mutex_lock(&pf->lock);
	pin = req.id ? xa_erase(&pf->pins, req.id) : NULL;
	if (pin)
		pf->pinned_pages -= pin->npages;
	mutex_unlock(&pf->lock);
	if (!pin)
		return -ENOENT;
	pm_release_pin(pin);
	return 0;
}

static long pm_ioctl_list(struct pm_file *pf, void __user *arg)
{
	struct pinmatrix_pin_info __user *uinfo;
	struct pinmatrix_list req;
	struct pm_pin *pin;
	unsigned long id;
	u32 n = 0;
	int ret;

	ret = pm_copy_args(&req, arg, sizeof(req));
	if (ret)
		return ret;
	uinfo = u64_to_user_ptr(req.pins);

	mutex_lock(&pf->lock);
	xa_for_each(&pf->pins, id, pin) {
		struct pinmatrix_pin_info info = {
			.id = pin->id,
			.contract = pin->contract,
			.flags = pin->flags,
			.addr = pin->addr,
			.npages = pin->npages,
		};

		if (n < req.count &&
		    copy_to_user(uinfo + n, &info, sizeof(info))) {
			ret = -EFAULT;
			break;
		}
		n++;
	}
	mutex_unlock(&pf->lock);
	if (ret)
		return ret;
	return put_user(n, &((struct pinmatrix_list __user *)arg)->count);
}

static long pm_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	struct pm_file *pf = file->private_data;
	void __user *arg = (void __user *)uarg;

	switch (cmd) {
	case PINMATRIX_IOC_INFO:
		return pm_ioctl_info(pf, arg);
	case PINMATRIX_IOC_PROBE:
		return pm_ioctl_probe(arg);
	case PINMATRIX_IOC_PIN:
		return pm_ioctl_pin(pf, arg);
	case PINMATRIX_IOC_UNPIN:
		return pm_ioctl_unpin(pf, arg);
	case PINMATRIX_IOC_LIST:
		return pm_ioctl_list(pf, arg);
	default:
		return -ENOTTY;
	}
}

static int pm_open(struct inode *inode, struct file *file)
{
	struct pm_file *pf;

	/* Holding pins defeats CMA and memory hot-unplug: root only. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	pf = kzalloc(sizeof(*pf), GFP_KERNEL);
	if (!pf)
		return -ENOMEM;
	mutex_init(&pf->lock);
	xa_init_flags(&pf->pins, XA_FLAGS_ALLOC1);
	file->private_data = pf;
	return 0;
}

/* Runs on the last close, including the one at exit of a killed process. */
static int pm_release(struct inode *inode, struct file *file)
{
	struct pm_file *pf = file->private_data;
	struct pm_pin *pin;
	unsigned long id;

	xa_for_each(&pf->pins, id, pin) {
		xa_erase(&pf->pins, id);
		pm_release_pin(pin);
	}
	xa_destroy(&pf->pins);
	mutex_destroy(&pf->lock);
	kfree(pf);
	return 0;
}

static const struct file_operations pm_fops = {
	.owner = THIS_MODULE,
	.open = pm_open,
	.release = pm_release,
	.unlocked_ioctl = pm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice pm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = PINMATRIX_DEVICE_NAME,
	.fops = &pm_fops,
	.mode = 0600,
};

module_misc_device(pm_misc);

MODULE_DESCRIPTION("Hold GUP pins with a chosen contract and report page placement");
MODULE_LICENSE("GPL");
