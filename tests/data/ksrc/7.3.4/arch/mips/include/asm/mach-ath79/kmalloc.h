/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) arch/mips/include/asm/mach-ath79/kmalloc.h lines 1-7 (the whole file) */
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __ASM_MACH_ATH79_KMALLOC_H
#define __ASM_MACH_ATH79_KMALLOC_H

#define ARCH_DMA_MINALIGN	L1_CACHE_BYTES

#endif /* __ASM_MACH_ATH79_KMALLOC_H */
