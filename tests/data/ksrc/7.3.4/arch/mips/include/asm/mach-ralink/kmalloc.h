/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) arch/mips/include/asm/mach-ralink/kmalloc.h lines 1-9 (the whole file) */
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __ASM_MACH_RALINK_KMALLOC_H
#define __ASM_MACH_RALINK_KMALLOC_H

#ifdef CONFIG_DMA_NONCOHERENT
#define ARCH_DMA_MINALIGN	L1_CACHE_BYTES
#endif

#endif /* __ASM_MACH_RALINK_KMALLOC_H */
