// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: a reference model of amdgpu's UALink export/import contract,
 * and a test double for amdgpu. The hardware it stands in for (a pod of
 * accelerators joined by UALink, and the amdgpu driver carrying the posted
 * UALink series) cannot exist here; the conformance cases in cases/ualink/
 * are written once against the ioctl ABI and run against either.
 *
 * The module creates N accelerators of one pod (parameter "accelerators"),
 * each a DRM device with a render node and shmem-backed GEM buffers whose
 * creation names a domain. The UALink handle ioctl has amdgpu's number and
 * layout (uapi/amdgpu_ualink.h) and keeps the contract of the series' v2
 * documentation and its review:
 *
 *  - export of a VRAM BO gives a random 128-bit handle (bits 9:0 of the low
 *    half: the exporter's accelerator id, never all zero); exporting the same
 *    BO again gives the same handle;
 *  - import on another accelerator gives a dma-buf fd of an object that
 *    stands for the exporter's memory through an NPA mapping; the NPA stays
 *    in the kernel; importing again gives the same object; the import (and
 *    the exporter's pin for it) goes with that object's last user; import
 *    on the exporter itself gives the BO's own dma-buf (amdgpu's local
 *    import);
 *  - the exporter's BO is pinned once per importer;
 *  - when the BO's GEM handle count reaches 0 the handle is destroyed and
 *    every importer's access is revoked;
 *  - a node reset or offline makes its peers clean up;
 *  - accel_state not "active" gives -EOPNOTSUPP before anything else, and
 *    unknown flags are refused (the posted driver does not check them);
 *  - what exports pin, all accelerators together, is capped (parameter
 *    "pin_limit_mib"): past it an export fails with -ENOSPC;
 *  - an import's dma-buf fd is installed only once DRM has copied the result
 *    out: a caller whose argument cannot be written back gets -EFAULT and no
 *    fd;
 *  - a local import hands out the BO's PRIME dma-buf through the DRM helper
 *    where the kernel has one (drm_gem_prime_handle_to_dmabuf()), so that
 *    PRIME import of it gives the caller's own GEM handle back.
 *
 * Model-only ioctls (uapi/ualink_sim.h) create BOs, perform loads/stores
 * over the simulated fabric and report pins and object counts; a debugfs
 * bitmask turns on known deviations, one bit each, so that the suite can
 * prove it catches them.
 *
 * One mutex (usim_pod.lock) guards all export/import state of the pod:
 * this is a model, clarity beats concurrency.
 *
 * This file holds the module and its devices: the parameters, the pod, the
 * DRM driver (ioctl table, fops, an import's fd slot) and each
 * accelerator's setup and teardown; usim_drv.h lists the other files.
 */

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>

#include "amdgpu_ualink.h"
#include "ualink_sim.h"
#include "usim_drv.h"

#define DRIVER_NAME	UALINK_SIM_DRIVER_NAME
#define DRIVER_DESC	"UALink reference model (test double for amdgpu)"
#define DRIVER_DATE	"20260901"	/* where drm_driver still has .date */
#define DRIVER_MAJOR	1
#define DRIVER_MINOR	0

static unsigned int accelerators = 4;
module_param(accelerators, uint, 0444);
MODULE_PARM_DESC(accelerators, "Accelerators in the simulated pod (1-64, default 4)");

/*
 * Exported BOs stay pinned (unmovable, unswappable shmem pages) for as long
 * as they are exported, and a render node is open to any user: without a
 * pod-wide cap any user could pin all memory. 0 at load: an eighth of RAM.
 */
unsigned int usim_pin_limit_mib;
module_param_named(pin_limit_mib, usim_pin_limit_mib, uint, 0644);
MODULE_PARM_DESC(pin_limit_mib,
		 "MiB all exports of the pod may pin together; past it export fails with ENOSPC (default: RAM/8)");

struct usim_pod usim_pod = {
	.lock = __MUTEX_INITIALIZER(usim_pod.lock),
	.pending_lock = __SPIN_LOCK_UNLOCKED(usim_pod.pending_lock),
	.pending = LIST_HEAD_INIT(usim_pod.pending),
};

/*
 * Not const: UALINK_SIM_FAULT_PRIMARY_NO_AUTH takes DRM_AUTH off the handle
 * ioctl's entry (usim_faults_set()), as if the driver had registered it with
 * DRM_RENDER_ALLOW alone, and UALINK_SIM_FAULT_ROOT_ONLY adds DRM_ROOT_ONLY;
 * drm_ioctl() reads an entry's flags once per call.
 */
static struct drm_ioctl_desc usim_ioctls[] = {
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_CREATE, usim_gem_create_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_MMAP, usim_gem_mmap_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_INFO, usim_gem_info_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_EVICT, usim_gem_evict_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_REMOTE_ACCESS, usim_remote_access_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_POD_STATS, usim_pod_stats_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_UALINK_HANDLE, usim_ualink_handle_ioctl,
			  DRM_AUTH | DRM_RENDER_ALLOW),
};

/* DRM_IOCTL_DEF_DRV() indexes an entry by its number past DRM_COMMAND_BASE. */
#define USIM_HANDLE_IOCTL (&usim_ioctls[DRM_AMDGPU_UALINK_HANDLE])

/* For usim_faults_set(): the handle ioctl's entry with @flags. */
void usim_handle_ioctl_set_flags(u32 flags)
{
	WRITE_ONCE(USIM_HANDLE_IOCTL->flags, flags);
}

/*
 * drm_ioctl() with the UALink ioctl's fd slot: the handler reserves an fd
 * number for an import, drm_ioctl() copies the result out, and only then is
 * the dma-buf installed under it; a failed copy-out releases both.
 */
static long usim_ioctl_call(long (*call)(struct file *filp, unsigned int cmd, unsigned long arg),
			    struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct usim_pending_fd pending = { .task = current, .fd = -1 };
	long ret;

	/* drm_ioctl() goes by the number alone: any type, size or direction. */
	if (DRM_IOCTL_NR(cmd) != DRM_COMMAND_BASE + DRM_AMDGPU_UALINK_HANDLE)
		return call(filp, cmd, arg);

	spin_lock(&usim_pod.pending_lock);
	list_add(&pending.link, &usim_pod.pending);
	spin_unlock(&usim_pod.pending_lock);
	ret = call(filp, cmd, arg);
	spin_lock(&usim_pod.pending_lock);
	list_del(&pending.link);
	spin_unlock(&usim_pod.pending_lock);

	/* A command that copies nothing out would hand out an fd unseen. */
	if (pending.dmabuf && !ret &&
	    (!(_IOC_DIR(cmd) & _IOC_READ) || _IOC_SIZE(cmd) < sizeof(__u32)))
		ret = -EINVAL;
	if (pending.dmabuf) {
		if (ret) {
			put_unused_fd(pending.fd);
			dma_buf_put(pending.dmabuf);
		} else {
			/* The fd owns the reference from here on. */
			fd_install(pending.fd, pending.dmabuf->file);
		}
	}
	return ret;
}

/* The import fd slot of the task in usim_ioctl_call(). */
struct usim_pending_fd *usim_pending_find(void)
{
	struct usim_pending_fd *p, *found = NULL;

	spin_lock(&usim_pod.pending_lock);
	list_for_each_entry(p, &usim_pod.pending, link) {
		if (p->task == current) {
			found = p;
			break;
		}
	}
	spin_unlock(&usim_pod.pending_lock);
	return found;
}

static long usim_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return usim_ioctl_call(drm_ioctl, filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
/* drm_compat_ioctl() passes driver ioctls to drm_ioctl() as they are. */
static long usim_compat_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return usim_ioctl_call(drm_compat_ioctl, filp, cmd, arg);
}
#else
#define usim_compat_ioctl NULL
#endif

/* DRM_GEM_FOPS, less drm_ioctl() itself. */
static const struct file_operations usim_fops = {
	.owner			= THIS_MODULE,
	.open			= drm_open,
	.release		= drm_release,
	.unlocked_ioctl		= usim_ioctl,
	.compat_ioctl		= usim_compat_ioctl,
	.poll			= drm_poll,
	.read			= drm_read,
	.llseek			= noop_llseek,
#ifdef PM_HAVE_DRM_GEM_GET_UNMAPPED_AREA
	.get_unmapped_area	= drm_gem_get_unmapped_area,
#endif
	.mmap			= drm_gem_mmap,
#ifdef PM_HAVE_FOP_UNSIGNED_OFFSET
	.fop_flags		= FOP_UNSIGNED_OFFSET,
#endif
};

/* After the file's GEM handles went: its exports no longer name it. */
static void usim_postclose(struct drm_device *dev, struct drm_file *file)
{
	usim_file_closed(to_accel(dev), file);
}

static const struct drm_driver usim_driver = {
	.driver_features		= DRIVER_GEM | DRIVER_RENDER,
	.postclose			= usim_postclose,
	.ioctls				= usim_ioctls,
	.num_ioctls			= ARRAY_SIZE(usim_ioctls),
	.fops				= &usim_fops,
	.gem_create_object		= usim_gem_create_object,
	.prime_handle_to_fd		= drm_gem_prime_handle_to_fd,
#ifdef PM_HAVE_DRM_GEM_PRIME_HANDLE_TO_DMABUF
	.prime_fd_to_handle		= drm_gem_prime_fd_to_handle,
#else
	.prime_fd_to_handle		= usim_prime_fd_to_handle,
#endif
	.gem_prime_import		= usim_gem_prime_import,
	.gem_prime_import_sg_table	= drm_gem_shmem_prime_import_sg_table,
#ifdef PM_HAVE_DRM_DRIVER_GEM_PRIME_MMAP
	/* Later kernels mmap a dma-buf through the object's own .mmap. */
	.gem_prime_mmap			= drm_gem_prime_mmap,
#endif
	.name				= DRIVER_NAME,
	.desc				= DRIVER_DESC,
#ifdef PM_HAVE_DRM_DRIVER_DATE
	.date				= DRIVER_DATE,
#endif
	.major				= DRIVER_MAJOR,
	.minor				= DRIVER_MINOR,
};

/* Module */

static void usim_accel_destroy(struct usim_accel *accel)
{
	struct platform_device *pdev = accel->pdev;

	kobject_put(accel->kobj);
	drm_dev_unregister(&accel->drm);
	devres_release_group(&pdev->dev, NULL);
	platform_device_unregister(pdev);
}

static int usim_accel_create(unsigned int id)
{
	struct platform_device *pdev;
	struct usim_accel *accel;
	int ret;

	pdev = platform_device_register_simple(DRIVER_NAME, id, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	if (!devres_open_group(&pdev->dev, NULL, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_unregister;
	}
	/* No DMA happens; PRIME between accelerators needs a mask all the same. */
	dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));

	accel = devm_drm_dev_alloc(&pdev->dev, &usim_driver, struct usim_accel, drm);
	if (IS_ERR(accel)) {
		ret = PTR_ERR(accel);
		goto err_devres;
	}
	accel->pdev = pdev;
	accel->id = id;
	accel->state = USIM_STATE_ACTIVE;
	accel->npa_next = USIM_NPA_FIRST;
	xa_init(&accel->exports);
	xa_init(&accel->revoked);
	INIT_LIST_HEAD(&accel->imports);
	platform_set_drvdata(pdev, accel);

	accel->kobj = kobject_create_and_add("ualink", &pdev->dev.kobj);
	if (!accel->kobj) {
		ret = -ENOMEM;
		goto err_devres;
	}
	ret = sysfs_create_group(accel->kobj, &usim_attr_group);
	if (ret)
		goto err_kobj;

	mutex_lock(&usim_pod.lock);
	usim_pod.accel[id] = accel;
	usim_pod.n = id + 1;
	mutex_unlock(&usim_pod.lock);

	ret = drm_dev_register(&accel->drm, 0);
	if (ret)
		goto err_pod;
	return 0;

err_pod:
	mutex_lock(&usim_pod.lock);
	usim_pod.n = id;
	usim_pod.accel[id] = NULL;
	mutex_unlock(&usim_pod.lock);
err_kobj:
	kobject_put(accel->kobj);
err_devres:
	devres_release_group(&pdev->dev, NULL);
err_unregister:
	platform_device_unregister(pdev);
	return ret;
}

static void usim_pod_destroy(void)
{
	unsigned int i;

	/*
	 * Imports hold dma-bufs, which hold this module: none is left when
	 * exit runs. Exports can outlive their handles with a fault bit set.
	 */
	mutex_lock(&usim_pod.lock);
	for (i = 0; i < usim_pod.n; i++)
		usim_node_lost(usim_pod.accel[i], true);
	mutex_unlock(&usim_pod.lock);

	while (usim_pod.n) {
		mutex_lock(&usim_pod.lock);
		i = --usim_pod.n;
		mutex_unlock(&usim_pod.lock);
		usim_accel_destroy(usim_pod.accel[i]);
		usim_pod.accel[i] = NULL;
	}
}

static int __init usim_init(void)
{
	unsigned int i;
	int ret;

	BUILD_BUG_ON(sizeof(unsigned long) < sizeof(u64));
	if (!accelerators || accelerators > USIM_MAX_ACCELS)
		return -EINVAL;
	if (!usim_pin_limit_mib)
		usim_pin_limit_mib = max(1UL, (totalram_pages() >> (20 - PAGE_SHIFT)) / 8);

	/* WQ_UNBOUND: 7.x warns on a workqueue that names neither kind. */
	usim_pod.wq = alloc_workqueue(DRIVER_NAME, WQ_UNBOUND, 0);
	if (!usim_pod.wq)
		return -ENOMEM;
	for (i = 0; i < accelerators; i++) {
		ret = usim_accel_create(i);
		if (ret) {
			usim_pod_destroy();
			destroy_workqueue(usim_pod.wq);
			return ret;
		}
	}
	usim_debugfs_init();
	return 0;
}

static void __exit usim_exit(void)
{
	usim_debugfs_fini();
	usim_pod_destroy();
	/* Its notices hold dma-bufs, which hold the module: none is left. */
	destroy_workqueue(usim_pod.wq);
}

module_init(usim_init);
module_exit(usim_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("GPL");
#ifdef PM_MODULE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
