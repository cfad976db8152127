/* Kernel UAPI headers before Linux 6.5 (Debian 12 ships 6.1) declare flexible
 * array members through an anonymous struct holding an empty struct. In C++ an
 * empty struct has size 1, so sizeof(struct kvm_cpuid2) becomes 12 instead of 8
 * and the ioctl numbers gem5 computes from it (KVM_SET_CPUID2 among them) are
 * ones the kernel does not know: EINVAL, "Failed to set guest CPUID2".
 * Build gem5 with CCFLAGS_EXTRA=-I<this directory's parent> to declare them as
 * plain zero-length arrays, as the fixed headers do. */
#ifndef SIMCXL_UAPI_CXX_STDDEF_H
#define SIMCXL_UAPI_CXX_STDDEF_H
#include_next <linux/stddef.h>
#ifdef __cplusplus
#undef __DECLARE_FLEX_ARRAY
#define __DECLARE_FLEX_ARRAY(TYPE, NAME) TYPE NAME[0]
#endif
#endif
