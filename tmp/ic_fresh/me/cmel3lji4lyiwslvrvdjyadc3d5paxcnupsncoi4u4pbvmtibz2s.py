# AOT ID: ['1_backward']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


cpp_fused_add_clamp_div_eq_exp_expand_ge_gt_index_put_le_logical_and_logsumexp_lt_masked_fill_mul_neg_new_zeros_select_sub_unsqueeze_where_0 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const bool*', 'const float*', 'const int64_t*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const int64_t* in_ptr5,
                       const bool* in_ptr6,
                       const float* in_ptr7,
                       const int64_t* in_ptr8,
                       float* out_ptr0,
                       float* out_ptr1,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2,
                       const int64_t ks3,
                       const int64_t ks4,
                       const int64_t ks5,
                       const int64_t ks6)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1L + ks0); x0+=static_cast<int64_t>(16L))
        {
            {
                if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L))))))
                {
                    auto tmp0 = static_cast<float>(0.0);
                    auto tmp1 = at::vec::Vectorized<float>(tmp0);
                    tmp1.store(out_ptr0 + static_cast<int64_t>(x0));
                }
                if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(1L + ks0)))
                {
                    auto tmp0 = static_cast<float>(0.0);
                    auto tmp1 = at::vec::Vectorized<float>(tmp0);
                    tmp1.store(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(1L + ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))));
                }
            }
        }
    }
    {
        #pragma GCC ivdep
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
        {
            for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)); x1+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L))))))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)))), static_cast<int64_t>(16));
                        auto tmp1 = in_ptr1[static_cast<int64_t>(x0)];
                        auto tmp12 = in_ptr2[static_cast<int64_t>(0L)];
                        auto tmp13 = in_ptr3[static_cast<int64_t>(0L)];
                        auto tmp16 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks5 + ((-1L)*ks4)))), static_cast<int64_t>(16));
                        auto tmp23 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(16));
                        auto tmp35 = at::vec::VecMask<float,1>::from(in_ptr6 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(16));
                        auto tmp2 = at::vec::Vectorized<float>(tmp1);
                        auto tmp3 = tmp0 * tmp2;
                        auto tmp4 = static_cast<float>(0.8);
                        auto tmp5 = at::vec::Vectorized<float>(tmp4);
                        auto tmp6 = at::vec::maximum(tmp0, tmp5);
                        auto tmp7 = static_cast<float>(1.2);
                        auto tmp8 = at::vec::Vectorized<float>(tmp7);
                        auto tmp9 = at::vec::minimum(tmp6, tmp8);
                        auto tmp10 = tmp9 * tmp2;
                        auto tmp11 = at::vec::VecMask<float,1>(tmp3 == tmp10);
                        auto tmp14 = tmp12 / tmp13;
                        auto tmp15 = decltype(tmp14)(-tmp14);
                        auto tmp17 = at::vec::Vectorized<float>(tmp15);
                        auto tmp18 = tmp17 * tmp16;
                        auto tmp19 = static_cast<float>(2.0);
                        auto tmp20 = at::vec::Vectorized<float>(tmp19);
                        auto tmp21 = tmp18 / tmp20;
                        auto tmp22 = decltype(tmp21)::blendv(tmp18, tmp21, tmp11.template cast<float,1>());
                        auto tmp24 = 1L + ks0;
                        auto tmp25 = c10::convert<int64_t>(tmp24);
                        auto tmp26 = at::vec::VectorizedN<int64_t,2>(tmp25);
                        auto tmp27 = tmp23 + tmp26;
                        auto tmp28 = static_cast<int64_t>(0);
                        auto tmp29 = at::vec::VectorizedN<int64_t,2>(tmp28);
                        auto tmp30 = at::vec::VecMask<int64_t,2>(tmp23 < tmp29);
                        auto tmp31 = decltype(tmp27)::blendv(tmp23, tmp27, tmp30.template cast<int64_t,2>());
                        auto tmp32 =
                        [&]
                        {
                            __at_align__ std::array<int64_t, 16> tmpbuf;
                            tmp31.store(tmpbuf.data(), static_cast<int64_t>(16));
                            return tmpbuf;
                        }
                        ()
                        ;
                        auto tmp33 =
                        [&]
                        {
                            __at_align__ std::array<int64_t, 16> tmpbuf;
                            #pragma GCC unroll 16
                            for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                            {
                                tmpbuf[x1_inner] = static_cast<int64_t>(tmp32[x1_inner]);
                            }
                            return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                        }
                        ()
                        ;
                        TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp33) & (tmp33 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))).all_masked(), "index out of bounds: 0 <= tmp33 < 1L + ks0");
                        auto tmp36 = at::vec::VecMask<float,1>(tmp0 >= tmp5);
                        auto tmp37 = at::vec::VecMask<float,1>(tmp0 <= tmp8);
                        auto tmp38 = tmp36.template cast<int32_t,1>();
                        auto tmp39 = tmp37.template cast<int32_t,1>();
                        auto tmp40 = tmp38 & tmp39;
                        auto tmp41 = at::vec::VecMask<float,1>(tmp3 < tmp10);
                        auto tmp42 = static_cast<float>(0.0);
                        auto tmp43 = at::vec::Vectorized<float>(tmp42);
                        auto tmp44 = decltype(tmp43)::blendv(tmp22, tmp43, tmp41.template cast<float,1>());
                        auto tmp45 = tmp44 * tmp2;
                        auto tmp46 = decltype(tmp45)::blendv(tmp43, tmp45, tmp40.template cast<float,1>());
                        auto tmp47 = at::vec::VecMask<float,1>(tmp3 > tmp10);
                        auto tmp48 = decltype(tmp43)::blendv(tmp22, tmp43, tmp47.template cast<float,1>());
                        auto tmp49 = tmp48 * tmp2;
                        auto tmp50 = tmp46 + tmp49;
                        auto tmp51 = tmp50 * tmp0;
                        auto tmp52 = decltype(tmp51)::blendv(tmp43, tmp51, tmp35.template cast<float,1>());
                        tmp22.store(out_ptr1 + static_cast<int64_t>(x1 + ks3*x0 + ks2*x0 + ((-1L)*ks4*x0)));
                        atomic_add_vec<float, 2, 1>(out_ptr0, tmp33, tmp52);
                    }
                    if(C10_UNLIKELY(x1 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))) && x1 < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4))))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        auto tmp1 = in_ptr1[static_cast<int64_t>(x0)];
                        auto tmp12 = in_ptr2[static_cast<int64_t>(0L)];
                        auto tmp13 = in_ptr3[static_cast<int64_t>(0L)];
                        auto tmp16 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks5 + ((-1L)*ks4)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        auto tmp23 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        auto tmp35 = at::vec::VecMask<float,1>::from(in_ptr6 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        auto tmp2 = at::vec::Vectorized<float>(tmp1);
                        auto tmp3 = tmp0 * tmp2;
                        auto tmp4 = static_cast<float>(0.8);
                        auto tmp5 = at::vec::Vectorized<float>(tmp4);
                        auto tmp6 = at::vec::maximum(tmp0, tmp5);
                        auto tmp7 = static_cast<float>(1.2);
                        auto tmp8 = at::vec::Vectorized<float>(tmp7);
                        auto tmp9 = at::vec::minimum(tmp6, tmp8);
                        auto tmp10 = tmp9 * tmp2;
                        auto tmp11 = at::vec::VecMask<float,1>(tmp3 == tmp10);
                        auto tmp14 = tmp12 / tmp13;
                        auto tmp15 = decltype(tmp14)(-tmp14);
                        auto tmp17 = at::vec::Vectorized<float>(tmp15);
                        auto tmp18 = tmp17 * tmp16;
                        auto tmp19 = static_cast<float>(2.0);
                        auto tmp20 = at::vec::Vectorized<float>(tmp19);
                        auto tmp21 = tmp18 / tmp20;
                        auto tmp22 = decltype(tmp21)::blendv(tmp18, tmp21, tmp11.template cast<float,1>());
                        auto tmp24 = 1L + ks0;
                        auto tmp25 = c10::convert<int64_t>(tmp24);
                        auto tmp26 = at::vec::VectorizedN<int64_t,2>(tmp25);
                        auto tmp27 = tmp23 + tmp26;
                        auto tmp28 = static_cast<int64_t>(0);
                        auto tmp29 = at::vec::VectorizedN<int64_t,2>(tmp28);
                        auto tmp30 = at::vec::VecMask<int64_t,2>(tmp23 < tmp29);
                        auto tmp31 = decltype(tmp27)::blendv(tmp23, tmp27, tmp30.template cast<int64_t,2>());
                        auto tmp32 =
                        [&]
                        {
                            __at_align__ std::array<int64_t, 16> tmpbuf;
                            tmp31.store(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                            return tmpbuf;
                        }
                        ()
                        ;
                        auto tmp33 =
                        [&]
                        {
                            __at_align__ std::array<int64_t, 16> tmpbuf;
                            #pragma GCC unroll 16
                            for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))); x1_inner++)
                            {
                                tmpbuf[x1_inner] = static_cast<int64_t>(tmp32[x1_inner]);
                            }
                            return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        }
                        ()
                        ;
                        TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp33) & (tmp33 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp33 < 1L + ks0");
                        auto tmp36 = at::vec::VecMask<float,1>(tmp0 >= tmp5);
                        auto tmp37 = at::vec::VecMask<float,1>(tmp0 <= tmp8);
                        auto tmp38 = tmp36.template cast<int32_t,1>();
                        auto tmp39 = tmp37.template cast<int32_t,1>();
                        auto tmp40 = tmp38 & tmp39;
                        auto tmp41 = at::vec::VecMask<float,1>(tmp3 < tmp10);
                        auto tmp42 = static_cast<float>(0.0);
                        auto tmp43 = at::vec::Vectorized<float>(tmp42);
                        auto tmp44 = decltype(tmp43)::blendv(tmp22, tmp43, tmp41.template cast<float,1>());
                        auto tmp45 = tmp44 * tmp2;
                        auto tmp46 = decltype(tmp45)::blendv(tmp43, tmp45, tmp40.template cast<float,1>());
                        auto tmp47 = at::vec::VecMask<float,1>(tmp3 > tmp10);
                        auto tmp48 = decltype(tmp43)::blendv(tmp22, tmp43, tmp47.template cast<float,1>());
                        auto tmp49 = tmp48 * tmp2;
                        auto tmp50 = tmp46 + tmp49;
                        auto tmp51 = tmp50 * tmp0;
                        auto tmp52 = decltype(tmp51)::blendv(tmp43, tmp51, tmp35.template cast<float,1>());
                        tmp22.store(out_ptr1 + static_cast<int64_t>(x1 + ks3*x0 + ks2*x0 + ((-1L)*ks4*x0)), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                        atomic_add_vec<float, 2, 1>(out_ptr0, tmp33, tmp52, static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                    }
                }
            }
        }
    }
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1L + ks0); x0+=static_cast<int64_t>(1L))
            {
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32000L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(32000L)))
                        {
                            auto tmp0 = out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 32000L*x0), static_cast<int64_t>(16));
                            auto tmp2 = in_ptr7[static_cast<int64_t>(x0)];
                            auto tmp3 = at::vec::Vectorized<float>(tmp2);
                            auto tmp4 = tmp1 - tmp3;
                            auto tmp5 = tmp4.exp();
                            auto tmp6 = at::vec::Vectorized<float>(tmp0);
                            auto tmp7 = tmp6 * tmp5;
                            auto tmp8 = tmp7.neg();
                            tmp8.store(in_out_ptr0 + static_cast<int64_t>(x1 + 32000L*x0));
                        }
                    }
                }
            }
        }
        #pragma omp single
        {
            {
                #pragma GCC ivdep
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
                {
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L))))))
                            {
                                auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(16));
                                auto tmp12 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr8 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(16));
                                auto tmp22 = at::vec::VecMask<float,1>::from(in_ptr6 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(16));
                                auto tmp23 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)))), static_cast<int64_t>(16));
                                auto tmp33 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp40 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x1 + ks3*x0 + ks2*x0 + ((-1L)*ks4*x0)), static_cast<int64_t>(16));
                                auto tmp1 = 1L + ks0;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                auto tmp3 = at::vec::VectorizedN<int64_t,2>(tmp2);
                                auto tmp4 = tmp0 + tmp3;
                                auto tmp5 = static_cast<int64_t>(0);
                                auto tmp6 = at::vec::VectorizedN<int64_t,2>(tmp5);
                                auto tmp7 = at::vec::VecMask<int64_t,2>(tmp0 < tmp6);
                                auto tmp8 = decltype(tmp4)::blendv(tmp0, tmp4, tmp7.template cast<int64_t,2>());
                                auto tmp9 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    tmp8.store(tmpbuf.data(), static_cast<int64_t>(16));
                                    return tmpbuf;
                                }
                                ()
                                ;
                                auto tmp10 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp9[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp10) & (tmp10 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))).all_masked(), "index out of bounds: 0 <= tmp10 < 1L + ks0");
                                auto tmp13 = 32000L;
                                auto tmp14 = c10::convert<int64_t>(tmp13);
                                auto tmp15 = at::vec::VectorizedN<int64_t,2>(tmp14);
                                auto tmp16 = tmp12 + tmp15;
                                auto tmp17 = at::vec::VecMask<int64_t,2>(tmp12 < tmp6);
                                auto tmp18 = decltype(tmp16)::blendv(tmp12, tmp16, tmp17.template cast<int64_t,2>());
                                auto tmp19 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    tmp18.store(tmpbuf.data(), static_cast<int64_t>(16));
                                    return tmpbuf;
                                }
                                ()
                                ;
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp19[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp20) & (tmp20 < at::vec::VectorizedN<int64_t,2>(32000L)))).all_masked(), "index out of bounds: 0 <= tmp20 < 32000L");
                                auto tmp24 = static_cast<float>(0.8);
                                auto tmp25 = at::vec::Vectorized<float>(tmp24);
                                auto tmp26 = at::vec::VecMask<float,1>(tmp23 >= tmp25);
                                auto tmp27 = static_cast<float>(1.2);
                                auto tmp28 = at::vec::Vectorized<float>(tmp27);
                                auto tmp29 = at::vec::VecMask<float,1>(tmp23 <= tmp28);
                                auto tmp30 = tmp26.template cast<int32_t,1>();
                                auto tmp31 = tmp29.template cast<int32_t,1>();
                                auto tmp32 = tmp30 & tmp31;
                                auto tmp34 = at::vec::Vectorized<float>(tmp33);
                                auto tmp35 = tmp23 * tmp34;
                                auto tmp36 = at::vec::maximum(tmp23, tmp25);
                                auto tmp37 = at::vec::minimum(tmp36, tmp28);
                                auto tmp38 = tmp37 * tmp34;
                                auto tmp39 = at::vec::VecMask<float,1>(tmp35 < tmp38);
                                auto tmp41 = static_cast<float>(0.0);
                                auto tmp42 = at::vec::Vectorized<float>(tmp41);
                                auto tmp43 = decltype(tmp42)::blendv(tmp40, tmp42, tmp39.template cast<float,1>());
                                auto tmp44 = tmp43 * tmp34;
                                auto tmp45 = decltype(tmp44)::blendv(tmp42, tmp44, tmp32.template cast<float,1>());
                                auto tmp46 = at::vec::VecMask<float,1>(tmp35 > tmp38);
                                auto tmp47 = decltype(tmp42)::blendv(tmp40, tmp42, tmp46.template cast<float,1>());
                                auto tmp48 = tmp47 * tmp34;
                                auto tmp49 = tmp45 + tmp48;
                                auto tmp50 = tmp49 * tmp23;
                                auto tmp51 = decltype(tmp50)::blendv(tmp42, tmp50, tmp22.template cast<float,1>());
                                auto tmp52 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp19[x1_inner] + 32000L*tmp9[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                atomic_add_vec<float, 2, 1>(in_out_ptr0, tmp52, tmp51);
                            }
                            if(C10_UNLIKELY(x1 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))) && x1 < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4))))
                            {
                                auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                auto tmp12 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr8 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                auto tmp22 = at::vec::VecMask<float,1>::from(in_ptr6 + static_cast<int64_t>(x1 + ks6*x0), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                auto tmp23 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                auto tmp33 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp40 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x1 + ks3*x0 + ks2*x0 + ((-1L)*ks4*x0)), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                auto tmp1 = 1L + ks0;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                auto tmp3 = at::vec::VectorizedN<int64_t,2>(tmp2);
                                auto tmp4 = tmp0 + tmp3;
                                auto tmp5 = static_cast<int64_t>(0);
                                auto tmp6 = at::vec::VectorizedN<int64_t,2>(tmp5);
                                auto tmp7 = at::vec::VecMask<int64_t,2>(tmp0 < tmp6);
                                auto tmp8 = decltype(tmp4)::blendv(tmp0, tmp4, tmp7.template cast<int64_t,2>());
                                auto tmp9 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    tmp8.store(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                    return tmpbuf;
                                }
                                ()
                                ;
                                auto tmp10 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp9[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                }
                                ()
                                ;
                                TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp10) & (tmp10 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp10 < 1L + ks0");
                                auto tmp13 = 32000L;
                                auto tmp14 = c10::convert<int64_t>(tmp13);
                                auto tmp15 = at::vec::VectorizedN<int64_t,2>(tmp14);
                                auto tmp16 = tmp12 + tmp15;
                                auto tmp17 = at::vec::VecMask<int64_t,2>(tmp12 < tmp6);
                                auto tmp18 = decltype(tmp16)::blendv(tmp12, tmp16, tmp17.template cast<int64_t,2>());
                                auto tmp19 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    tmp18.store(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                    return tmpbuf;
                                }
                                ()
                                ;
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp19[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                }
                                ()
                                ;
                                TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp20) & (tmp20 < at::vec::VectorizedN<int64_t,2>(32000L)))), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp20 < 32000L");
                                auto tmp24 = static_cast<float>(0.8);
                                auto tmp25 = at::vec::Vectorized<float>(tmp24);
                                auto tmp26 = at::vec::VecMask<float,1>(tmp23 >= tmp25);
                                auto tmp27 = static_cast<float>(1.2);
                                auto tmp28 = at::vec::Vectorized<float>(tmp27);
                                auto tmp29 = at::vec::VecMask<float,1>(tmp23 <= tmp28);
                                auto tmp30 = tmp26.template cast<int32_t,1>();
                                auto tmp31 = tmp29.template cast<int32_t,1>();
                                auto tmp32 = tmp30 & tmp31;
                                auto tmp34 = at::vec::Vectorized<float>(tmp33);
                                auto tmp35 = tmp23 * tmp34;
                                auto tmp36 = at::vec::maximum(tmp23, tmp25);
                                auto tmp37 = at::vec::minimum(tmp36, tmp28);
                                auto tmp38 = tmp37 * tmp34;
                                auto tmp39 = at::vec::VecMask<float,1>(tmp35 < tmp38);
                                auto tmp41 = static_cast<float>(0.0);
                                auto tmp42 = at::vec::Vectorized<float>(tmp41);
                                auto tmp43 = decltype(tmp42)::blendv(tmp40, tmp42, tmp39.template cast<float,1>());
                                auto tmp44 = tmp43 * tmp34;
                                auto tmp45 = decltype(tmp44)::blendv(tmp42, tmp44, tmp32.template cast<float,1>());
                                auto tmp46 = at::vec::VecMask<float,1>(tmp35 > tmp38);
                                auto tmp47 = decltype(tmp42)::blendv(tmp40, tmp42, tmp46.template cast<float,1>());
                                auto tmp48 = tmp47 * tmp34;
                                auto tmp49 = tmp45 + tmp48;
                                auto tmp50 = tmp49 * tmp23;
                                auto tmp51 = decltype(tmp50)::blendv(tmp42, tmp50, tmp22.template cast<float,1>());
                                auto tmp52 =
                                [&]
                                {
                                    __at_align__ std::array<int64_t, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))); x1_inner++)
                                    {
                                        tmpbuf[x1_inner] = static_cast<int64_t>(tmp19[x1_inner] + 32000L*tmp9[x1_inner]);
                                    }
                                    return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                                }
                                ()
                                ;
                                atomic_add_vec<float, 2, 1>(in_out_ptr0, tmp52, tmp51, static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3 + ks2 + ((-1L)*ks4)), static_cast<int64_t>(16L)))));
                            }
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused_add_div_expand_index_add_index_select_mul_new_zeros_pow_sum_view_1 = async_compile.cpp_pybinding(['float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto in_ptr2 = in_out_ptr0;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp1 = in_ptr1[static_cast<int64_t>(x1)];
                                auto tmp2 = ks1;
                                auto tmp3 = c10::convert<int64_t>(tmp2);
                                auto tmp4 = int64_t(tmp1 + tmp3);
                                auto tmp5 = tmp1 < 0;
                                auto tmp6 = tmp5 ? tmp4 : tmp1;
                                auto tmp7 = tmp6;
                                auto tmp8 = c10::convert<int64_t>(tmp7);
                                TORCH_CHECK((0 <= tmp8) & (tmp8 < ks1), "index out of bounds: 0 <= tmp8 < ks1");
                                auto tmp10 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x0 + 64L*tmp6), static_cast<int64_t>(16));
                                auto tmp11 = in_ptr3[static_cast<int64_t>(tmp6)];
                                auto tmp12 = at::vec::Vectorized<float>(tmp11);
                                auto tmp13 = tmp10 * tmp12;
                                auto tmp14 = tmp0 * tmp13;
                                tmp_acc0_vec = tmp_acc0_vec + tmp14;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L*ks1); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L*ks1)))
                    {
                        auto tmp0 = static_cast<float>(0.0);
                        auto tmp1 = at::vec::Vectorized<float>(tmp0);
                        tmp1.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = in_ptr1[static_cast<int64_t>(x0)];
                            auto tmp9 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp10 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = ks1;
                            auto tmp2 = c10::convert<int64_t>(tmp1);
                            auto tmp3 = int64_t(tmp0 + tmp2);
                            auto tmp4 = tmp0 < 0;
                            auto tmp5 = tmp4 ? tmp3 : tmp0;
                            auto tmp6 = tmp5;
                            auto tmp7 = c10::convert<int64_t>(tmp6);
                            TORCH_CHECK((0 <= tmp7) & (tmp7 < ks1), "index out of bounds: 0 <= tmp7 < ks1");
                            auto tmp11 = tmp9 * tmp10;
                            auto tmp12 = x1 + 64L*tmp5;
                            auto tmp13 = c10::convert<int64_t>(tmp12);
                            auto tmp14 = at::vec::VectorizedN<int64_t,2>::arange(tmp13, 1);
                            atomic_add_vec<float, 2, 1>(out_ptr1, tmp14, tmp11);
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                tmp_acc0_vec = tmp_acc0_vec + tmp2;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp1 = in_ptr3[static_cast<int64_t>(x0)];
                            auto tmp4 = out_ptr2[static_cast<int64_t>(x0)];
                            auto tmp12 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 * tmp2;
                            auto tmp5 = static_cast<float>(-0.5);
                            auto tmp6 = float(tmp4 * tmp5);
                            auto tmp7 = float(tmp1 * tmp1);
                            auto tmp8 = float(tmp7 * tmp1);
                            auto tmp9 = float(tmp6 * tmp8);
                            auto tmp10 = static_cast<float>(64.0);
                            auto tmp11 = tmp9 / tmp10;
                            auto tmp13 = static_cast<float>(2.0);
                            auto tmp14 = at::vec::Vectorized<float>(tmp13);
                            auto tmp15 = tmp12 * tmp14;
                            auto tmp16 = at::vec::Vectorized<float>(tmp11);
                            auto tmp17 = tmp16 * tmp15;
                            auto tmp18 = tmp3 + tmp17;
                            tmp18.store(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__unsafe_view_mul_silu_silu_backward_view_2 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       float* out_ptr0,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(192L*ks0); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(192L*ks0)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp10 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp2 = tmp1.neg();
                        auto tmp3 = tmp2.exp();
                        auto tmp4 = static_cast<float>(1.0);
                        auto tmp5 = at::vec::Vectorized<float>(tmp4);
                        auto tmp6 = tmp3 + tmp5;
                        auto tmp7 = tmp1 / tmp6;
                        auto tmp8 = tmp0 * tmp7;
                        auto tmp9 = decltype(tmp1)(1)/(decltype(tmp1)(1) + tmp1.neg().exp());
                        auto tmp11 = tmp0 * tmp10;
                        auto tmp12 = tmp11 * tmp9;
                        auto tmp13 = tmp5 - tmp9;
                        auto tmp14 = tmp1 * tmp13;
                        auto tmp15 = tmp14 + tmp5;
                        auto tmp16 = tmp12 * tmp15;
                        tmp8.store(out_ptr0 + static_cast<int64_t>(x0));
                        tmp16.store(in_out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused_add_div_expand_mul_pow_sum_view_3 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       float* out_ptr0,
                       float* out_ptr1,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp4 = in_ptr3[static_cast<int64_t>(x1)];
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp5 = at::vec::Vectorized<float>(tmp4);
                                auto tmp6 = tmp3 * tmp5;
                                auto tmp7 = tmp2 * tmp6;
                                tmp_acc0_vec = tmp_acc0_vec + tmp7;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp5 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                auto tmp6 = tmp4 * tmp5;
                                tmp_acc0_vec = tmp_acc0_vec + tmp6;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp4 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp6 = in_ptr3[static_cast<int64_t>(x0)];
                            auto tmp10 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp18 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp3 = tmp1 + tmp2;
                            auto tmp5 = tmp3 * tmp4;
                            auto tmp7 = at::vec::Vectorized<float>(tmp6);
                            auto tmp8 = tmp5 * tmp7;
                            auto tmp9 = tmp0 + tmp8;
                            auto tmp11 = static_cast<float>(-0.5);
                            auto tmp12 = float(tmp10 * tmp11);
                            auto tmp13 = float(tmp6 * tmp6);
                            auto tmp14 = float(tmp13 * tmp6);
                            auto tmp15 = float(tmp12 * tmp14);
                            auto tmp16 = static_cast<float>(64.0);
                            auto tmp17 = tmp15 / tmp16;
                            auto tmp19 = static_cast<float>(2.0);
                            auto tmp20 = at::vec::Vectorized<float>(tmp19);
                            auto tmp21 = tmp18 * tmp20;
                            auto tmp22 = at::vec::Vectorized<float>(tmp17);
                            auto tmp23 = tmp22 * tmp21;
                            auto tmp24 = tmp9 + tmp23;
                            tmp24.store(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_4 = async_compile.cpp_pybinding(['float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr0 = in_out_ptr0;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp59 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*ks1 + 32L*x0), static_cast<int64_t>(16));
                                auto tmp60 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp69 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp0 = x2;
                                auto tmp1 = c10::convert<int64_t>(tmp0);
                                auto tmp2 = at::vec::VectorizedN<int64_t,2>::arange(tmp1, 1);
                                auto tmp3 = static_cast<int64_t>(8);
                                auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                auto tmp5 = at::vec::VecMask<int64_t,2>(tmp2 >= tmp4);
                                auto tmp6 = [&]
                                {
                                    auto tmp7 = tmp5.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>((-8L) + x2 + 16L*x1 + 32L*ks1 + 32L*x0));
                                    auto tmp8 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp9 = ks2;
                                    auto tmp10 = c10::convert<int64_t>(tmp9);
                                    auto tmp11 = int64_t(tmp8 + tmp10);
                                    auto tmp12 = tmp8 < 0;
                                    auto tmp13 = tmp12 ? tmp11 : tmp8;
                                    auto tmp14 = tmp13;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    TORCH_CHECK(((0 <= tmp15) & (tmp15 < ks2)) | ~((tmp5).all_masked()), "index out of bounds: 0 <= tmp15 < ks2");
                                    auto tmp17 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp5.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp18 = c10::convert<float>(tmp14);
                                    auto tmp19 = at::vec::Vectorized<float>(tmp18);
                                    auto tmp20 = tmp19 * tmp17;
                                    auto tmp21 = tmp20.sin();
                                    auto tmp22 = static_cast<float>(1.0);
                                    auto tmp23 = at::vec::Vectorized<float>(tmp22);
                                    auto tmp24 = tmp21 * tmp23;
                                    auto tmp25 = tmp7 * tmp24;
                                    auto tmp26 = tmp25.neg();
                                    return tmp26;
                                }
                                ;
                                auto tmp29 =
                                [&]
                                {
                                    if (tmp5.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp27 = tmp6();
                                        auto tmp28 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp27)::blendv(tmp28, tmp27, tmp5.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp30 = static_cast<float>(0.0);
                                auto tmp31 = at::vec::Vectorized<float>(tmp30);
                                auto tmp32 = decltype(tmp29)::blendv(tmp31, tmp29, tmp5.template cast<float,1>());
                                auto tmp33 = at::vec::VecMask<int64_t,2>(tmp2 < tmp4);
                                auto tmp34 = [&]
                                {
                                    auto tmp35 = tmp33.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*ks1 + 32L*x0));
                                    auto tmp36 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp37 = ks2;
                                    auto tmp38 = c10::convert<int64_t>(tmp37);
                                    auto tmp39 = int64_t(tmp36 + tmp38);
                                    auto tmp40 = tmp36 < 0;
                                    auto tmp41 = tmp40 ? tmp39 : tmp36;
                                    auto tmp42 = tmp41;
                                    auto tmp43 = c10::convert<int64_t>(tmp42);
                                    TORCH_CHECK(((0 <= tmp43) & (tmp43 < ks2)) | ~((tmp33).all_masked()), "index out of bounds: 0 <= tmp43 < ks2");
                                    auto tmp45 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp33.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp46 = c10::convert<float>(tmp42);
                                    auto tmp47 = at::vec::Vectorized<float>(tmp46);
                                    auto tmp48 = tmp47 * tmp45;
                                    auto tmp49 = tmp48.sin();
                                    auto tmp50 = static_cast<float>(1.0);
                                    auto tmp51 = at::vec::Vectorized<float>(tmp50);
                                    auto tmp52 = tmp49 * tmp51;
                                    auto tmp53 = tmp35 * tmp52;
                                    return tmp53;
                                }
                                ;
                                auto tmp56 =
                                [&]
                                {
                                    if (tmp33.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp54 = tmp34();
                                        auto tmp55 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp54)::blendv(tmp55, tmp54, tmp33.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp57 = decltype(tmp56)::blendv(tmp31, tmp56, tmp33.template cast<float,1>());
                                auto tmp58 = tmp32 + tmp57;
                                auto tmp61 = ks2;
                                auto tmp62 = c10::convert<int64_t>(tmp61);
                                auto tmp63 = int64_t(tmp60 + tmp62);
                                auto tmp64 = tmp60 < 0;
                                auto tmp65 = tmp64 ? tmp63 : tmp60;
                                auto tmp66 = tmp65;
                                auto tmp67 = c10::convert<int64_t>(tmp66);
                                TORCH_CHECK((0 <= tmp67) & (tmp67 < ks2), "index out of bounds: 0 <= tmp67 < ks2");
                                auto tmp70 = c10::convert<float>(tmp66);
                                auto tmp71 = at::vec::Vectorized<float>(tmp70);
                                auto tmp72 = tmp71 * tmp69;
                                auto tmp73 = tmp72.cos();
                                auto tmp74 = static_cast<float>(1.0);
                                auto tmp75 = at::vec::Vectorized<float>(tmp74);
                                auto tmp76 = tmp73 * tmp75;
                                auto tmp77 = tmp59 * tmp76;
                                auto tmp78 = tmp58 + tmp77;
                                tmp78.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L*ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                    {
                        tmp_acc0_vec.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L*ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                tmp_acc0_vec = tmp_acc0_vec + tmp4;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp3 = in_ptr4[static_cast<int64_t>(x0)];
                            auto tmp6 = out_ptr2[static_cast<int64_t>(x0)];
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp2 = tmp0 * tmp1;
                            auto tmp4 = at::vec::Vectorized<float>(tmp3);
                            auto tmp5 = tmp2 * tmp4;
                            auto tmp7 = static_cast<float>(-0.5);
                            auto tmp8 = float(tmp6 * tmp7);
                            auto tmp9 = float(tmp3 * tmp3);
                            auto tmp10 = float(tmp9 * tmp3);
                            auto tmp11 = float(tmp8 * tmp10);
                            auto tmp12 = static_cast<float>(16.0);
                            auto tmp13 = tmp11 / tmp12;
                            auto tmp15 = static_cast<float>(2.0);
                            auto tmp16 = at::vec::Vectorized<float>(tmp15);
                            auto tmp17 = tmp14 * tmp16;
                            auto tmp18 = at::vec::Vectorized<float>(tmp13);
                            auto tmp19 = tmp18 * tmp17;
                            auto tmp20 = tmp5 + tmp19;
                            tmp20.store(in_out_ptr0 + static_cast<int64_t>(x1 + 16L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_5 = async_compile.cpp_pybinding(['float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr0 = in_out_ptr0;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp59 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp60 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp69 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp0 = x2;
                                auto tmp1 = c10::convert<int64_t>(tmp0);
                                auto tmp2 = at::vec::VectorizedN<int64_t,2>::arange(tmp1, 1);
                                auto tmp3 = static_cast<int64_t>(8);
                                auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                auto tmp5 = at::vec::VecMask<int64_t,2>(tmp2 >= tmp4);
                                auto tmp6 = [&]
                                {
                                    auto tmp7 = tmp5.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>((-8L) + x2 + 16L*x1 + 64L*x0));
                                    auto tmp8 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp9 = ks1;
                                    auto tmp10 = c10::convert<int64_t>(tmp9);
                                    auto tmp11 = int64_t(tmp8 + tmp10);
                                    auto tmp12 = tmp8 < 0;
                                    auto tmp13 = tmp12 ? tmp11 : tmp8;
                                    auto tmp14 = tmp13;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    TORCH_CHECK(((0 <= tmp15) & (tmp15 < ks1)) | ~((tmp5).all_masked()), "index out of bounds: 0 <= tmp15 < ks1");
                                    auto tmp17 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp5.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp18 = c10::convert<float>(tmp14);
                                    auto tmp19 = at::vec::Vectorized<float>(tmp18);
                                    auto tmp20 = tmp19 * tmp17;
                                    auto tmp21 = tmp20.sin();
                                    auto tmp22 = static_cast<float>(1.0);
                                    auto tmp23 = at::vec::Vectorized<float>(tmp22);
                                    auto tmp24 = tmp21 * tmp23;
                                    auto tmp25 = tmp7 * tmp24;
                                    auto tmp26 = tmp25.neg();
                                    return tmp26;
                                }
                                ;
                                auto tmp29 =
                                [&]
                                {
                                    if (tmp5.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp27 = tmp6();
                                        auto tmp28 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp27)::blendv(tmp28, tmp27, tmp5.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp30 = static_cast<float>(0.0);
                                auto tmp31 = at::vec::Vectorized<float>(tmp30);
                                auto tmp32 = decltype(tmp29)::blendv(tmp31, tmp29, tmp5.template cast<float,1>());
                                auto tmp33 = at::vec::VecMask<int64_t,2>(tmp2 < tmp4);
                                auto tmp34 = [&]
                                {
                                    auto tmp35 = tmp33.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0));
                                    auto tmp36 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp37 = ks1;
                                    auto tmp38 = c10::convert<int64_t>(tmp37);
                                    auto tmp39 = int64_t(tmp36 + tmp38);
                                    auto tmp40 = tmp36 < 0;
                                    auto tmp41 = tmp40 ? tmp39 : tmp36;
                                    auto tmp42 = tmp41;
                                    auto tmp43 = c10::convert<int64_t>(tmp42);
                                    TORCH_CHECK(((0 <= tmp43) & (tmp43 < ks1)) | ~((tmp33).all_masked()), "index out of bounds: 0 <= tmp43 < ks1");
                                    auto tmp45 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp33.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp46 = c10::convert<float>(tmp42);
                                    auto tmp47 = at::vec::Vectorized<float>(tmp46);
                                    auto tmp48 = tmp47 * tmp45;
                                    auto tmp49 = tmp48.sin();
                                    auto tmp50 = static_cast<float>(1.0);
                                    auto tmp51 = at::vec::Vectorized<float>(tmp50);
                                    auto tmp52 = tmp49 * tmp51;
                                    auto tmp53 = tmp35 * tmp52;
                                    return tmp53;
                                }
                                ;
                                auto tmp56 =
                                [&]
                                {
                                    if (tmp33.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp54 = tmp34();
                                        auto tmp55 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp54)::blendv(tmp55, tmp54, tmp33.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp57 = decltype(tmp56)::blendv(tmp31, tmp56, tmp33.template cast<float,1>());
                                auto tmp58 = tmp32 + tmp57;
                                auto tmp61 = ks1;
                                auto tmp62 = c10::convert<int64_t>(tmp61);
                                auto tmp63 = int64_t(tmp60 + tmp62);
                                auto tmp64 = tmp60 < 0;
                                auto tmp65 = tmp64 ? tmp63 : tmp60;
                                auto tmp66 = tmp65;
                                auto tmp67 = c10::convert<int64_t>(tmp66);
                                TORCH_CHECK((0 <= tmp67) & (tmp67 < ks1), "index out of bounds: 0 <= tmp67 < ks1");
                                auto tmp70 = c10::convert<float>(tmp66);
                                auto tmp71 = at::vec::Vectorized<float>(tmp70);
                                auto tmp72 = tmp71 * tmp69;
                                auto tmp73 = tmp72.cos();
                                auto tmp74 = static_cast<float>(1.0);
                                auto tmp75 = at::vec::Vectorized<float>(tmp74);
                                auto tmp76 = tmp73 * tmp75;
                                auto tmp77 = tmp59 * tmp76;
                                auto tmp78 = tmp58 + tmp77;
                                tmp78.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L*ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                    {
                        tmp_acc0_vec.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(4L*ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                tmp_acc0_vec = tmp_acc0_vec + tmp4;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp3 = in_ptr4[static_cast<int64_t>(x0)];
                            auto tmp6 = out_ptr2[static_cast<int64_t>(x0)];
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp2 = tmp0 * tmp1;
                            auto tmp4 = at::vec::Vectorized<float>(tmp3);
                            auto tmp5 = tmp2 * tmp4;
                            auto tmp7 = static_cast<float>(-0.5);
                            auto tmp8 = float(tmp6 * tmp7);
                            auto tmp9 = float(tmp3 * tmp3);
                            auto tmp10 = float(tmp9 * tmp3);
                            auto tmp11 = float(tmp8 * tmp10);
                            auto tmp12 = static_cast<float>(16.0);
                            auto tmp13 = tmp11 / tmp12;
                            auto tmp15 = static_cast<float>(2.0);
                            auto tmp16 = at::vec::Vectorized<float>(tmp15);
                            auto tmp17 = tmp14 * tmp16;
                            auto tmp18 = at::vec::Vectorized<float>(tmp13);
                            auto tmp19 = tmp18 * tmp17;
                            auto tmp20 = tmp5 + tmp19;
                            tmp20.store(in_out_ptr0 + static_cast<int64_t>(x1 + 16L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused_add_div_expand_mul_pow_sum_view_6 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr0,
                       float* out_ptr1,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp5 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp6 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 + tmp3;
                                auto tmp7 = at::vec::Vectorized<float>(tmp6);
                                auto tmp8 = tmp5 * tmp7;
                                auto tmp9 = tmp4 * tmp8;
                                tmp_acc0_vec = tmp_acc0_vec + tmp9;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp5 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 + tmp3;
                                auto tmp6 = tmp4 * tmp5;
                                auto tmp8 = tmp6 * tmp7;
                                tmp_acc0_vec = tmp_acc0_vec + tmp8;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp4 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp6 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp8 = in_ptr4[static_cast<int64_t>(x0)];
                            auto tmp12 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp20 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp3 = tmp1 + tmp2;
                            auto tmp5 = tmp3 + tmp4;
                            auto tmp7 = tmp5 * tmp6;
                            auto tmp9 = at::vec::Vectorized<float>(tmp8);
                            auto tmp10 = tmp7 * tmp9;
                            auto tmp11 = tmp0 + tmp10;
                            auto tmp13 = static_cast<float>(-0.5);
                            auto tmp14 = float(tmp12 * tmp13);
                            auto tmp15 = float(tmp8 * tmp8);
                            auto tmp16 = float(tmp15 * tmp8);
                            auto tmp17 = float(tmp14 * tmp16);
                            auto tmp18 = static_cast<float>(64.0);
                            auto tmp19 = tmp17 / tmp18;
                            auto tmp21 = static_cast<float>(2.0);
                            auto tmp22 = at::vec::Vectorized<float>(tmp21);
                            auto tmp23 = tmp20 * tmp22;
                            auto tmp24 = at::vec::Vectorized<float>(tmp19);
                            auto tmp25 = tmp24 * tmp23;
                            auto tmp26 = tmp11 + tmp25;
                            tmp26.store(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__unsafe_view_add_div_expand_mul_pow_sum_view_7 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr0,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp5 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp6 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                auto tmp7 = tmp5 + tmp6;
                                auto tmp8 = tmp4 * tmp7;
                                tmp_acc0_vec = tmp_acc0_vec + tmp8;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp4 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp6 = in_ptr5[static_cast<int64_t>(x0)];
                            auto tmp10 = out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp18 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp19 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp3 = tmp1 + tmp2;
                            auto tmp5 = tmp3 * tmp4;
                            auto tmp7 = at::vec::Vectorized<float>(tmp6);
                            auto tmp8 = tmp5 * tmp7;
                            auto tmp9 = tmp0 + tmp8;
                            auto tmp11 = static_cast<float>(-0.5);
                            auto tmp12 = float(tmp10 * tmp11);
                            auto tmp13 = float(tmp6 * tmp6);
                            auto tmp14 = float(tmp13 * tmp6);
                            auto tmp15 = float(tmp12 * tmp14);
                            auto tmp16 = static_cast<float>(64.0);
                            auto tmp17 = tmp15 / tmp16;
                            auto tmp20 = tmp18 + tmp19;
                            auto tmp21 = static_cast<float>(2.0);
                            auto tmp22 = at::vec::Vectorized<float>(tmp21);
                            auto tmp23 = tmp20 * tmp22;
                            auto tmp24 = at::vec::Vectorized<float>(tmp17);
                            auto tmp25 = tmp24 * tmp23;
                            auto tmp26 = tmp9 + tmp25;
                            tmp26.store(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_8 = async_compile.cpp_pybinding(['const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp59 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*ks1 + 32L*x0), static_cast<int64_t>(16));
                                auto tmp60 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp69 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp0 = x2;
                                auto tmp1 = c10::convert<int64_t>(tmp0);
                                auto tmp2 = at::vec::VectorizedN<int64_t,2>::arange(tmp1, 1);
                                auto tmp3 = static_cast<int64_t>(8);
                                auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                auto tmp5 = at::vec::VecMask<int64_t,2>(tmp2 >= tmp4);
                                auto tmp6 = [&]
                                {
                                    auto tmp7 = tmp5.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>((-8L) + x2 + 16L*x1 + 32L*ks1 + 32L*x0));
                                    auto tmp8 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp9 = ks2;
                                    auto tmp10 = c10::convert<int64_t>(tmp9);
                                    auto tmp11 = int64_t(tmp8 + tmp10);
                                    auto tmp12 = tmp8 < 0;
                                    auto tmp13 = tmp12 ? tmp11 : tmp8;
                                    auto tmp14 = tmp13;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    TORCH_CHECK(((0 <= tmp15) & (tmp15 < ks2)) | ~((tmp5).all_masked()), "index out of bounds: 0 <= tmp15 < ks2");
                                    auto tmp17 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp5.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp18 = c10::convert<float>(tmp14);
                                    auto tmp19 = at::vec::Vectorized<float>(tmp18);
                                    auto tmp20 = tmp19 * tmp17;
                                    auto tmp21 = tmp20.sin();
                                    auto tmp22 = static_cast<float>(1.0);
                                    auto tmp23 = at::vec::Vectorized<float>(tmp22);
                                    auto tmp24 = tmp21 * tmp23;
                                    auto tmp25 = tmp7 * tmp24;
                                    auto tmp26 = tmp25.neg();
                                    return tmp26;
                                }
                                ;
                                auto tmp29 =
                                [&]
                                {
                                    if (tmp5.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp27 = tmp6();
                                        auto tmp28 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp27)::blendv(tmp28, tmp27, tmp5.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp30 = static_cast<float>(0.0);
                                auto tmp31 = at::vec::Vectorized<float>(tmp30);
                                auto tmp32 = decltype(tmp29)::blendv(tmp31, tmp29, tmp5.template cast<float,1>());
                                auto tmp33 = at::vec::VecMask<int64_t,2>(tmp2 < tmp4);
                                auto tmp34 = [&]
                                {
                                    auto tmp35 = tmp33.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*ks1 + 32L*x0));
                                    auto tmp36 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp37 = ks2;
                                    auto tmp38 = c10::convert<int64_t>(tmp37);
                                    auto tmp39 = int64_t(tmp36 + tmp38);
                                    auto tmp40 = tmp36 < 0;
                                    auto tmp41 = tmp40 ? tmp39 : tmp36;
                                    auto tmp42 = tmp41;
                                    auto tmp43 = c10::convert<int64_t>(tmp42);
                                    TORCH_CHECK(((0 <= tmp43) & (tmp43 < ks2)) | ~((tmp33).all_masked()), "index out of bounds: 0 <= tmp43 < ks2");
                                    auto tmp45 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp33.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp46 = c10::convert<float>(tmp42);
                                    auto tmp47 = at::vec::Vectorized<float>(tmp46);
                                    auto tmp48 = tmp47 * tmp45;
                                    auto tmp49 = tmp48.sin();
                                    auto tmp50 = static_cast<float>(1.0);
                                    auto tmp51 = at::vec::Vectorized<float>(tmp50);
                                    auto tmp52 = tmp49 * tmp51;
                                    auto tmp53 = tmp35 * tmp52;
                                    return tmp53;
                                }
                                ;
                                auto tmp56 =
                                [&]
                                {
                                    if (tmp33.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp54 = tmp34();
                                        auto tmp55 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp54)::blendv(tmp55, tmp54, tmp33.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp57 = decltype(tmp56)::blendv(tmp31, tmp56, tmp33.template cast<float,1>());
                                auto tmp58 = tmp32 + tmp57;
                                auto tmp61 = ks2;
                                auto tmp62 = c10::convert<int64_t>(tmp61);
                                auto tmp63 = int64_t(tmp60 + tmp62);
                                auto tmp64 = tmp60 < 0;
                                auto tmp65 = tmp64 ? tmp63 : tmp60;
                                auto tmp66 = tmp65;
                                auto tmp67 = c10::convert<int64_t>(tmp66);
                                TORCH_CHECK((0 <= tmp67) & (tmp67 < ks2), "index out of bounds: 0 <= tmp67 < ks2");
                                auto tmp70 = c10::convert<float>(tmp66);
                                auto tmp71 = at::vec::Vectorized<float>(tmp70);
                                auto tmp72 = tmp71 * tmp69;
                                auto tmp73 = tmp72.cos();
                                auto tmp74 = static_cast<float>(1.0);
                                auto tmp75 = at::vec::Vectorized<float>(tmp74);
                                auto tmp76 = tmp73 * tmp75;
                                auto tmp77 = tmp59 * tmp76;
                                auto tmp78 = tmp58 + tmp77;
                                tmp78.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L*ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                tmp_acc0_vec = tmp_acc0_vec + tmp4;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp3 = in_ptr5[static_cast<int64_t>(x0)];
                            auto tmp6 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp2 = tmp0 * tmp1;
                            auto tmp4 = at::vec::Vectorized<float>(tmp3);
                            auto tmp5 = tmp2 * tmp4;
                            auto tmp7 = static_cast<float>(-0.5);
                            auto tmp8 = float(tmp6 * tmp7);
                            auto tmp9 = float(tmp3 * tmp3);
                            auto tmp10 = float(tmp9 * tmp3);
                            auto tmp11 = float(tmp8 * tmp10);
                            auto tmp12 = static_cast<float>(16.0);
                            auto tmp13 = tmp11 / tmp12;
                            auto tmp15 = static_cast<float>(2.0);
                            auto tmp16 = at::vec::Vectorized<float>(tmp15);
                            auto tmp17 = tmp14 * tmp16;
                            auto tmp18 = at::vec::Vectorized<float>(tmp13);
                            auto tmp19 = tmp18 * tmp17;
                            auto tmp20 = tmp5 + tmp19;
                            tmp20.store(out_ptr2 + static_cast<int64_t>(x1 + 16L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_9 = async_compile.cpp_pybinding(['const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp59 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp60 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp69 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp0 = x2;
                                auto tmp1 = c10::convert<int64_t>(tmp0);
                                auto tmp2 = at::vec::VectorizedN<int64_t,2>::arange(tmp1, 1);
                                auto tmp3 = static_cast<int64_t>(8);
                                auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                auto tmp5 = at::vec::VecMask<int64_t,2>(tmp2 >= tmp4);
                                auto tmp6 = [&]
                                {
                                    auto tmp7 = tmp5.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>((-8L) + x2 + 16L*x1 + 64L*x0));
                                    auto tmp8 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp9 = ks1;
                                    auto tmp10 = c10::convert<int64_t>(tmp9);
                                    auto tmp11 = int64_t(tmp8 + tmp10);
                                    auto tmp12 = tmp8 < 0;
                                    auto tmp13 = tmp12 ? tmp11 : tmp8;
                                    auto tmp14 = tmp13;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    TORCH_CHECK(((0 <= tmp15) & (tmp15 < ks1)) | ~((tmp5).all_masked()), "index out of bounds: 0 <= tmp15 < ks1");
                                    auto tmp17 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp5.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp18 = c10::convert<float>(tmp14);
                                    auto tmp19 = at::vec::Vectorized<float>(tmp18);
                                    auto tmp20 = tmp19 * tmp17;
                                    auto tmp21 = tmp20.sin();
                                    auto tmp22 = static_cast<float>(1.0);
                                    auto tmp23 = at::vec::Vectorized<float>(tmp22);
                                    auto tmp24 = tmp21 * tmp23;
                                    auto tmp25 = tmp7 * tmp24;
                                    auto tmp26 = tmp25.neg();
                                    return tmp26;
                                }
                                ;
                                auto tmp29 =
                                [&]
                                {
                                    if (tmp5.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp27 = tmp6();
                                        auto tmp28 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp27)::blendv(tmp28, tmp27, tmp5.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp30 = static_cast<float>(0.0);
                                auto tmp31 = at::vec::Vectorized<float>(tmp30);
                                auto tmp32 = decltype(tmp29)::blendv(tmp31, tmp29, tmp5.template cast<float,1>());
                                auto tmp33 = at::vec::VecMask<int64_t,2>(tmp2 < tmp4);
                                auto tmp34 = [&]
                                {
                                    auto tmp35 = tmp33.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0));
                                    auto tmp36 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp37 = ks1;
                                    auto tmp38 = c10::convert<int64_t>(tmp37);
                                    auto tmp39 = int64_t(tmp36 + tmp38);
                                    auto tmp40 = tmp36 < 0;
                                    auto tmp41 = tmp40 ? tmp39 : tmp36;
                                    auto tmp42 = tmp41;
                                    auto tmp43 = c10::convert<int64_t>(tmp42);
                                    TORCH_CHECK(((0 <= tmp43) & (tmp43 < ks1)) | ~((tmp33).all_masked()), "index out of bounds: 0 <= tmp43 < ks1");
                                    auto tmp45 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp33.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp46 = c10::convert<float>(tmp42);
                                    auto tmp47 = at::vec::Vectorized<float>(tmp46);
                                    auto tmp48 = tmp47 * tmp45;
                                    auto tmp49 = tmp48.sin();
                                    auto tmp50 = static_cast<float>(1.0);
                                    auto tmp51 = at::vec::Vectorized<float>(tmp50);
                                    auto tmp52 = tmp49 * tmp51;
                                    auto tmp53 = tmp35 * tmp52;
                                    return tmp53;
                                }
                                ;
                                auto tmp56 =
                                [&]
                                {
                                    if (tmp33.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp54 = tmp34();
                                        auto tmp55 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp54)::blendv(tmp55, tmp54, tmp33.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp57 = decltype(tmp56)::blendv(tmp31, tmp56, tmp33.template cast<float,1>());
                                auto tmp58 = tmp32 + tmp57;
                                auto tmp61 = ks1;
                                auto tmp62 = c10::convert<int64_t>(tmp61);
                                auto tmp63 = int64_t(tmp60 + tmp62);
                                auto tmp64 = tmp60 < 0;
                                auto tmp65 = tmp64 ? tmp63 : tmp60;
                                auto tmp66 = tmp65;
                                auto tmp67 = c10::convert<int64_t>(tmp66);
                                TORCH_CHECK((0 <= tmp67) & (tmp67 < ks1), "index out of bounds: 0 <= tmp67 < ks1");
                                auto tmp70 = c10::convert<float>(tmp66);
                                auto tmp71 = at::vec::Vectorized<float>(tmp70);
                                auto tmp72 = tmp71 * tmp69;
                                auto tmp73 = tmp72.cos();
                                auto tmp74 = static_cast<float>(1.0);
                                auto tmp75 = at::vec::Vectorized<float>(tmp74);
                                auto tmp76 = tmp73 * tmp75;
                                auto tmp77 = tmp59 * tmp76;
                                auto tmp78 = tmp58 + tmp77;
                                tmp78.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(4L*ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                tmp_acc0_vec = tmp_acc0_vec + tmp4;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp3 = in_ptr5[static_cast<int64_t>(x0)];
                            auto tmp6 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp2 = tmp0 * tmp1;
                            auto tmp4 = at::vec::Vectorized<float>(tmp3);
                            auto tmp5 = tmp2 * tmp4;
                            auto tmp7 = static_cast<float>(-0.5);
                            auto tmp8 = float(tmp6 * tmp7);
                            auto tmp9 = float(tmp3 * tmp3);
                            auto tmp10 = float(tmp9 * tmp3);
                            auto tmp11 = float(tmp8 * tmp10);
                            auto tmp12 = static_cast<float>(16.0);
                            auto tmp13 = tmp11 / tmp12;
                            auto tmp15 = static_cast<float>(2.0);
                            auto tmp16 = at::vec::Vectorized<float>(tmp15);
                            auto tmp17 = tmp14 * tmp16;
                            auto tmp18 = at::vec::Vectorized<float>(tmp13);
                            auto tmp19 = tmp18 * tmp17;
                            auto tmp20 = tmp5 + tmp19;
                            tmp20.store(out_ptr2 + static_cast<int64_t>(x1 + 16L*x0));
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__unsafe_view_add_mul_sum_view_10 = async_compile.cpp_pybinding(['const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       const float* in_ptr8,
                       float* out_ptr0,
                       float* out_ptr1,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    float tmp_acc1 = 0;
                    at::vec::Vectorized<float> tmp_acc1_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp4 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp6 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp10 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp11 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr7 + static_cast<int64_t>(x0 + 64L*x1), static_cast<int64_t>(16));
                                auto tmp15 = in_ptr8[static_cast<int64_t>(x1)];
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp5 = tmp3 + tmp4;
                                auto tmp7 = at::vec::Vectorized<float>(tmp6);
                                auto tmp8 = tmp5 * tmp7;
                                auto tmp9 = tmp2 * tmp8;
                                auto tmp12 = tmp10 + tmp11;
                                auto tmp14 = tmp12 + tmp13;
                                auto tmp16 = at::vec::Vectorized<float>(tmp15);
                                auto tmp17 = tmp3 * tmp16;
                                auto tmp18 = tmp14 * tmp17;
                                tmp_acc0_vec = tmp_acc0_vec + tmp9;
                                tmp_acc1_vec = tmp_acc1_vec + tmp18;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                        tmp_acc1_vec.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_neg_sin_slice_slice_backward_sum_transpose_unsqueeze_view_11 = async_compile.cpp_pybinding(['const float*', 'const float*', 'const float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       float* out_ptr0,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L*ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1)];
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_neg_sin_slice_slice_backward_sum_transpose_unsqueeze_view_12 = async_compile.cpp_pybinding(['const float*', 'const float*', 'const float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       float* out_ptr0,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L*ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1)];
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                    {
                        tmp_acc0_vec.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused_add_div_embedding_dense_backward_expand_mul_pow_sum_view_13 = async_compile.cpp_pybinding(['const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const int64_t* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       float* out_ptr0,
                       float* out_ptr1,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2048000L); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(2048000L)))
                    {
                        auto tmp0 = static_cast<float>(0.0);
                        auto tmp1 = at::vec::Vectorized<float>(tmp0);
                        tmp1.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp5 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 + tmp3;
                                auto tmp6 = tmp4 * tmp5;
                                auto tmp8 = tmp6 * tmp7;
                                tmp_acc0_vec = tmp_acc0_vec + tmp8;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = in_ptr5[static_cast<int64_t>(x0)];
                            auto tmp18 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp19 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp20 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp22 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp24 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp26 = in_ptr7[static_cast<int64_t>(x0)];
                            auto tmp30 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp38 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<int64_t>(31999);
                            auto tmp2 = min_propagate_nan(tmp1, tmp0);
                            auto tmp3 = static_cast<int64_t>(-32000);
                            auto tmp4 = max_propagate_nan(tmp3, tmp2);
                            auto tmp5 = 32000L;
                            auto tmp6 = c10::convert<int64_t>(tmp5);
                            auto tmp7 = int64_t(tmp4 + tmp6);
                            auto tmp8 = tmp4 < 0;
                            auto tmp9 = tmp8 ? tmp7 : tmp4;
                            auto tmp10 = static_cast<int64_t>(0);
                            auto tmp11 = tmp0 >= tmp10;
                            auto tmp12 = static_cast<int64_t>(32000);
                            auto tmp13 = tmp0 < tmp12;
                            auto tmp14 = decltype(tmp11)(tmp11 & tmp13);
                            auto tmp15 = static_cast<int64_t>(-1);
                            auto tmp16 = tmp0 != tmp15;
                            auto tmp17 = decltype(tmp14)(tmp14 & tmp16);
                            auto tmp21 = tmp19 + tmp20;
                            auto tmp23 = tmp21 + tmp22;
                            auto tmp25 = tmp23 * tmp24;
                            auto tmp27 = at::vec::Vectorized<float>(tmp26);
                            auto tmp28 = tmp25 * tmp27;
                            auto tmp29 = tmp18 + tmp28;
                            auto tmp31 = static_cast<float>(-0.5);
                            auto tmp32 = float(tmp30 * tmp31);
                            auto tmp33 = float(tmp26 * tmp26);
                            auto tmp34 = float(tmp33 * tmp26);
                            auto tmp35 = float(tmp32 * tmp34);
                            auto tmp36 = static_cast<float>(64.0);
                            auto tmp37 = tmp35 / tmp36;
                            auto tmp39 = static_cast<float>(2.0);
                            auto tmp40 = at::vec::Vectorized<float>(tmp39);
                            auto tmp41 = tmp38 * tmp40;
                            auto tmp42 = at::vec::Vectorized<float>(tmp37);
                            auto tmp43 = tmp42 * tmp41;
                            auto tmp44 = tmp29 + tmp43;
                            auto tmp45 = static_cast<float>(0.0);
                            auto tmp46 = at::vec::VecMask<float,1>::from(tmp17);
                            auto tmp47 = at::vec::Vectorized<float>(tmp45);
                            auto tmp48 = decltype(tmp44)::blendv(tmp47, tmp44, tmp46.template cast<float,1>());
                            auto tmp49 = x1 + 64L*tmp9;
                            auto tmp50 = c10::convert<int64_t>(tmp49);
                            auto tmp51 = at::vec::VectorizedN<int64_t,2>::arange(tmp50, 1);
                            atomic_add_vec<float, 2, 1>(out_ptr0, tmp51, tmp48);
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        primals_3, primals_5, primals_19, primals_21, primals_52, primals_59, primals_8, primals_6, primals_28, primals_30, primals_33, primals_32, primals_57, primals_60, sym_size_int_74, sym_sum, primals_11, primals_12, primals_13, primals_14, primals_15, primals_16, primals_17, primals_20, primals_29, primals_31, primals_34, primals_35, primals_36, primals_37, primals_38, primals_39, primals_40, primals_41, primals_42, primals_43, primals_44, primals_45, primals_46, primals_47, primals_48, primals_49, primals_50, primals_53, primals_54, primals_55, primals_64, empty, permute_3, embedding_1, rsqrt_1, view_5, mm_1, rsqrt_3, mm_3, rsqrt_5, add_375, cat_4, cat_5, getitem_2, getitem_3, mm_7, rsqrt_7, view_31, mm_9, mm_11, view_39, add_609, rsqrt_9, view_43, mm_15, rsqrt_11, mm_17, rsqrt_13, add_926, cat_10, cat_11, getitem_6, getitem_7, add_1043, rsqrt_15, view_69, mm_23, mm_25, view_77, add_1160, rsqrt_17, view_81, unsqueeze_9, cat_12, expand_1, expand_2, convert_element_type_1, exp_5, sum_3, unsqueeze_16, tangents_1 = args
        args.clear()
        s26 = primals_3
        s30 = s26
        s86 = primals_5
        s31 = primals_21
        s56 = s31
        s41 = s31
        s3 = primals_52
        s25 = primals_59
        s99 = s25
        s6 = s25
        s37 = s25
        s40 = s25
        s7 = primals_8
        s83 = primals_6
        s4 = primals_28
        s28 = primals_30
        s100 = primals_33
        s77 = primals_32
        s50 = primals_57
        s10 = primals_60
        buf1 = empty_strided_cpu((1 + s3, ), (1, ), torch.float32)
        assert_size_stride(exp_5, (s25, s83 + s7 + ((-1)*s86)), (max(1, s83 + s7 + ((-1)*s86)), 1), 'input')
        assert_size_stride(primals_64, (s25, ), (1, ), 'input')
        assert_size_stride(tangents_1, (), (), 'input')
        assert_size_stride(sum_3, (), (), 'input')
        assert_size_stride(convert_element_type_1, (s25, s83 + s10 + ((-1)*s86)), (max(1, s83 + s10 + ((-1)*s86)), 1), 'input')
        assert_size_stride(expand_1, (s25, s83 + s7 + ((-1)*s86), 1), (s50, 1, 1), 'input')
        assert_size_stride(expand_2, (s25, s83 + s7 + ((-1)*s86), 1), (s50, 1, 1), 'input')
        buf0 = empty_strided_cpu((s25, s83 + s7 + ((-1)*s86)), (s83 + s7 + ((-1)*s86), 1), torch.float32)
        assert_size_stride(cat_12, (1, 1 + s3, 32000), (32000 + 32000*s3, 32000, 1), 'input')
        assert_size_stride(unsqueeze_16, (1 + s3, 1), (1, 1), 'input')
        buf3 = reinterpret_tensor(cat_12, (1 + s3, 32000), (32000, 1), 0); del cat_12  # reuse
        assert_size_stride(unsqueeze_9, (s25, s83 + s7 + ((-1)*s86), 1), (s7, 1, 1), 'input')
        assert_size_stride(view_81, (s3, 64), (64, 1), 'input')
        cpp_fused_add_clamp_div_eq_exp_expand_ge_gt_index_put_le_logical_and_logsumexp_lt_masked_fill_mul_neg_new_zeros_select_sub_unsqueeze_where_0(buf3, exp_5, primals_64, tangents_1, sum_3, convert_element_type_1, expand_1, expand_2, unsqueeze_16, unsqueeze_9, buf1, buf0, s3, s25, s7, s83, s86, s10, s50)
        del buf0
        del buf1
        del convert_element_type_1
        del exp_5
        del expand_1
        del expand_2
        del primals_64
        del sum_3
        del tangents_1
        del unsqueeze_16
        del unsqueeze_9
        buf5 = empty_strided_cpu((32000, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [unsqueeze_2, slice_26, view_83, permute_50, mm_30], Original ATen: [aten.unsqueeze, aten.slice, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf3, (32000, s3), (1, 32000), 32000), view_81, out=buf5)
        del view_81
        assert_size_stride(primals_55, (32000, 64), (64, 1), 'input')
        buf6 = empty_strided_cpu((s3, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [unsqueeze_2, slice_26, view_83, linear_43, permute_52, mm_31], Original ATen: [aten.unsqueeze, aten.slice, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf3, (s3, 32000), (32000, 1), 32000), primals_55, out=buf6)
        del buf3
        del primals_55
        assert_size_stride(primals_53, (s3, ), (1, ), 'input')
        assert_size_stride(add_1160, (1, s26, 64), (64*s26, 64, 1), 'input')
        assert_size_stride(rsqrt_17, (1, s26, 1), (s26, 1, 1), 'input')
        buf7 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        buf8 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        assert_size_stride(primals_54, (64, ), (1, ), 'input')
        buf10 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf11 = add_1160; del add_1160  # reuse
        assert_size_stride(view_77, (s26, 192), (192, 1), 'input')
        cpp_fused_add_div_expand_index_add_index_select_mul_new_zeros_pow_sum_view_1(buf11, buf6, primals_53, rsqrt_17, primals_54, buf7, buf8, buf10, s3, s26)
        del buf6
        del primals_53
        del primals_54
        del rsqrt_17
        buf12 = empty_strided_cpu((64, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [mul_1489, pow_19, mul_1490, mul_1491, expand_4, div_8, pow_20, mul_1492, mul_1493, add_1325, view_86, permute_54, mm_32], Original ATen: [aten.mul, aten.pow, aten.expand, aten.div, aten.add, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf11, (64, s26), (1, 64), 0), view_77, out=buf12)
        del view_77
        assert_size_stride(primals_50, (64, 192), (192, 1), 'input')
        buf13 = empty_strided_cpu((s26, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [mul_1489, pow_19, mul_1490, mul_1491, expand_4, div_8, pow_20, mul_1492, mul_1493, add_1325, view_86, down_proj_2, permute_56, mm_33], Original ATen: [aten.mul, aten.pow, aten.expand, aten.div, aten.add, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf11, (s26, 64), (64, 1), 0), primals_50, out=buf13)
        del primals_50
        assert_size_stride(mm_23, (s26, 192), (192, 1), 'input')
        assert_size_stride(mm_25, (s26, 192), (192, 1), 'input')
        buf14 = empty_strided_cpu((1, s26, 192), (192*s26, 192, 1), torch.float32)
        buf18 = reinterpret_tensor(mm_25, (1, s26, 192), (192*s26, 192, 1), 0); del mm_25  # reuse
        assert_size_stride(view_69, (s26, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_mul_silu_silu_backward_view_2(buf18, buf13, mm_23, buf14, s26)
        del mm_23
        buf15 = empty_strided_cpu((192, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_87, linear_35, silu_3, mul_1494, view_88, permute_58, mm_34], Original ATen: [aten.view, aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf14, (192, s26), (1, 192), 0), view_69, out=buf15)
        assert_size_stride(primals_49, (192, 64), (64, 1), 'input')
        buf16 = reinterpret_tensor(buf8, (s26, 64), (64, 1), 0); del buf8  # reuse
        # Topologically Sorted Source Nodes: [view_87, linear_35, silu_3, mul_1494, view_88, linear_37, permute_60, mm_35], Original ATen: [aten.view, aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf14, (s26, 192), (192, 1), 0), primals_49, out=buf16)
        del primals_49
        buf19 = empty_strided_cpu((192, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_87, linear_35, linear_39, mul_1495, mul_1496, sub_434, mul_1497, add_1326, mul_1498, view_90, permute_62, mm_36], Original ATen: [aten.view, aten._unsafe_view, aten.mul, aten.silu_backward, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf18, (192, s26), (1, 192), 0), view_69, out=buf19)
        del view_69
        assert_size_stride(primals_48, (192, 64), (64, 1), 'input')
        buf20 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_87, linear_35, linear_39, mul_1495, mul_1496, sub_434, mul_1497, add_1326, mul_1498, view_90, linear_33, permute_64, mm_37], Original ATen: [aten.view, aten._unsafe_view, aten.mul, aten.silu_backward, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf18, (s26, 192), (192, 1), 0), primals_48, out=buf20)
        del buf18
        del primals_48
        assert_size_stride(add_1043, (1, s26, 64), (64*s26, 64, 1), 'input')
        assert_size_stride(rsqrt_15, (1, s26, 1), (s26, 1, 1), 'input')
        buf21 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        assert_size_stride(primals_47, (64, ), (1, ), 'input')
        buf22 = buf10; del buf10  # reuse
        buf23 = buf11; del buf11  # reuse
        assert_size_stride(getitem_6, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'input')
        cpp_fused_add_div_expand_mul_pow_sum_view_3(buf23, buf16, buf20, add_1043, rsqrt_15, primals_47, buf21, buf22, s26)
        del add_1043
        del primals_47
        del rsqrt_15
        buf24 = empty_strided_cpu((64, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_93, permute_66, transpose_19, reshape_27, attn_output_13, mm_38], Original ATen: [aten.view, aten.t, aten.transpose, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf23, (64, s26), (1, 64), 0), reinterpret_tensor(getitem_6, (s26, 64), (64, 1), 0), out=buf24)
        assert_size_stride(primals_46, (64, 64), (64, 1), 'input')
        buf25 = buf20; del buf20  # reuse
        # Topologically Sorted Source Nodes: [view_93, attn_output_12, permute_68, mm_39], Original ATen: [aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf23, (s26, 64), (64, 1), 0), primals_46, out=buf25)
        del primals_46
        assert_size_stride(add_926, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'input')
        assert_size_stride(cat_10, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 'input')
        assert_size_stride(cat_11, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 'input')
        assert_size_stride(getitem_7, (1, 4, s26), (4*s26, s26, 1), 'input')
        assert_size_stride(primals_29, (s4, 2), (2, 1), 'input')
        assert_size_stride(primals_31, (s28, ), (1, ), 'input')
        assert_size_stride(primals_34, (s77, s100), (s100, 1), 'input')
        # Topologically Sorted Source Nodes: [view_94, view_95, permute_70, tree_attention_backward], Original ATen: [aten.view, aten.transpose, replaycompile.tree_attention_backward]
        buf26 = torch.ops.replaycompile.tree_attention_backward.default(reinterpret_tensor(buf25, (1, 4, s26, 16), (64*s26, 16, 64, 1), 0), add_926, cat_10, cat_11, getitem_6, getitem_7, empty, primals_29, primals_31, primals_34, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0)
        del add_926
        del cat_10
        del cat_11
        del getitem_6
        del getitem_7
        buf27 = buf26[0]
        assert_size_stride(buf27, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf27 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        buf28 = buf26[1]
        assert_size_stride(buf28, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16, 32, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf28 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        buf29 = buf26[2]
        assert_size_stride(buf29, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16, 32, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf29 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        del buf26
        assert_size_stride(view_43, (s26, 64), (64, 1), 'input')
        buf30 = empty_strided_cpu((32, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [slice_28, permute_71, view_97, view_98, permute_72, mm_40], Original ATen: [aten.slice, aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf29, (32, s26), (1, 32), 32*s31), view_43, out=buf30)
        assert_size_stride(primals_45, (32, 64), (64, 1), 'input')
        buf31 = buf25; del buf25  # reuse
        # Topologically Sorted Source Nodes: [slice_28, permute_71, view_97, view_98, linear_27, permute_74, mm_41], Original ATen: [aten.slice, aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf29, (s26, 32), (32, 1), 32*s31), primals_45, out=buf31)
        del buf29
        del primals_45
        assert_size_stride(primals_20, (s26, ), (1, ), 'input')
        assert_size_stride(primals_11, (8, ), (1, ), 'input')
        buf32 = empty_strided_cpu((1, 2, s26, 16), (32*s26, 16, 32, 1), torch.float32)
        assert_size_stride(mm_17, (s26, 32), (32, 1), 'input')
        assert_size_stride(rsqrt_13, (1, s26, 2, 1), (2*s26, 2, 1, 1), 'input')
        buf33 = empty_strided_cpu((1, 1, 1, 16), (16, 16, 16, 1), torch.float32)
        assert_size_stride(primals_44, (16, ), (1, ), 'input')
        buf34 = empty_strided_cpu((1, s26, 2, 1), (2*s26, 2, 1, 2*s26), torch.float32)
        buf35 = reinterpret_tensor(buf32, (1, s26, 2, 16), (32*s26, 32, 16, 1), 0); del buf32  # reuse
        cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_4(buf35, buf28, primals_20, primals_11, mm_17, rsqrt_13, primals_44, buf33, buf34, s26, s31, s86)
        del buf28
        del mm_17
        del primals_44
        del rsqrt_13
        buf36 = empty_strided_cpu((32, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [slice_30, arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, mul_1507, slice_31, slice_32, neg_15, full_default_8, add_1338, cos, cos_1, cos_3, pack_rows_3, mul_1508, add_1339, permute_76, mul_1511, linear_25, reshape_17, mul_1514, pow_23, mul_1515, mul_1516, expand_6, div_10, pow_24, mul_1517, mul_1518, add_1342, clone_2, view_101, view_102, permute_77, mm_42], Original ATen: [aten.slice, aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.neg, aten.slice_backward, aten.cos, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf35, (32, s26), (1, 32), 0), view_43, out=buf36)
        assert_size_stride(primals_43, (32, 64), (64, 1), 'input')
        buf37 = buf16; del buf16  # reuse
        # Topologically Sorted Source Nodes: [slice_30, arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, mul_1507, slice_31, slice_32, neg_15, full_default_8, add_1338, cos, cos_1, cos_3, pack_rows_3, mul_1508, add_1339, permute_76, mul_1511, linear_25, reshape_17, mul_1514, pow_23, mul_1515, mul_1516, expand_6, div_10, pow_24, mul_1517, mul_1518, add_1342, clone_2, view_101, view_102, linear_23, permute_79, mm_43], Original ATen: [aten.slice, aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.neg, aten.slice_backward, aten.cos, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf35, (s26, 32), (32, 1), 0), primals_43, out=buf37)
        del primals_43
        buf38 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16, 64, 1), torch.float32)
        assert_size_stride(mm_15, (s26, 64), (64, 1), 'input')
        assert_size_stride(rsqrt_11, (1, s26, 4, 1), (4*s26, 4, 1, 1), 'input')
        buf39 = empty_strided_cpu((1, 1, 1, 16), (16, 16, 16, 1), torch.float32)
        assert_size_stride(primals_42, (16, ), (1, ), 'input')
        buf40 = empty_strided_cpu((1, s26, 4, 1), (4*s26, 4, 1, 4*s26), torch.float32)
        buf41 = reinterpret_tensor(buf38, (1, s26, 4, 16), (64*s26, 64, 16, 1), 0); del buf38  # reuse
        cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_5(buf41, buf27, primals_20, primals_11, mm_15, rsqrt_11, primals_42, buf39, buf40, s26, s86)
        del buf27
        del mm_15
        del primals_42
        del rsqrt_11
        buf42 = empty_strided_cpu((64, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, cos, cos_1, cos_3, pack_rows_3, mul_1509, slice_33, slice_34, neg_16, full_default_10, add_1340, mul_1510, add_1341, permute_81, mul_1519, linear_21, reshape_15, mul_1522, pow_25, mul_1523, mul_1524, expand_7, div_11, pow_26, mul_1525, mul_1526, add_1344, clone_3, view_105, view_106, permute_82, mm_44], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.cos, aten.slice, aten.neg, aten.slice_backward, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf41, (64, s26), (1, 64), 0), view_43, out=buf42)
        del view_43
        assert_size_stride(primals_41, (64, 64), (64, 1), 'input')
        buf43 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, cos, cos_1, cos_3, pack_rows_3, mul_1509, slice_33, slice_34, neg_16, full_default_10, add_1340, mul_1510, add_1341, permute_81, mul_1519, linear_21, reshape_15, mul_1522, pow_25, mul_1523, mul_1524, expand_7, div_11, pow_26, mul_1525, mul_1526, add_1344, clone_3, view_105, view_106, linear_19, permute_84, mm_45], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.cos, aten.slice, aten.neg, aten.slice_backward, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf41, (s26, 64), (64, 1), 0), primals_41, out=buf43)
        del primals_41
        assert_size_stride(add_609, (1, s26, 64), (64*s26, 64, 1), 'input')
        assert_size_stride(rsqrt_9, (1, s26, 1), (s26, 1, 1), 'input')
        buf44 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        assert_size_stride(primals_40, (64, ), (1, ), 'input')
        buf45 = buf22; del buf22  # reuse
        buf46 = buf23; del buf23  # reuse
        assert_size_stride(view_39, (s26, 192), (192, 1), 'input')
        cpp_fused_add_div_expand_mul_pow_sum_view_6(buf46, buf31, buf37, buf43, add_609, rsqrt_9, primals_40, buf44, buf45, s26)
        del add_609
        del primals_40
        del rsqrt_9
        buf47 = empty_strided_cpu((64, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_109, permute_86, mm_46], Original ATen: [aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf46, (64, s26), (1, 64), 0), view_39, out=buf47)
        del view_39
        assert_size_stride(primals_39, (64, 192), (192, 1), 'input')
        buf48 = reinterpret_tensor(buf14, (s26, 192), (192, 1), 0); del buf14  # reuse
        # Topologically Sorted Source Nodes: [view_109, down_proj, permute_88, mm_47], Original ATen: [aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf46, (s26, 64), (64, 1), 0), primals_39, out=buf48)
        del primals_39
        assert_size_stride(mm_9, (s26, 192), (192, 1), 'input')
        assert_size_stride(mm_11, (s26, 192), (192, 1), 'input')
        buf49 = reinterpret_tensor(buf13, (1, s26, 192), (192*s26, 192, 1), 0); del buf13  # reuse
        buf53 = reinterpret_tensor(mm_11, (1, s26, 192), (192*s26, 192, 1), 0); del mm_11  # reuse
        assert_size_stride(view_31, (s26, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_mul_silu_silu_backward_view_2(buf53, buf48, mm_9, buf49, s26)
        del buf48
        del mm_9
        buf50 = empty_strided_cpu((192, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_110, linear_11, silu_1, mul_1535, view_111, permute_90, mm_48], Original ATen: [aten.view, aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf49, (192, s26), (1, 192), 0), view_31, out=buf50)
        assert_size_stride(primals_38, (192, 64), (64, 1), 'input')
        buf51 = buf43; del buf43  # reuse
        # Topologically Sorted Source Nodes: [view_110, linear_11, silu_1, mul_1535, view_111, linear_13, permute_92, mm_49], Original ATen: [aten.view, aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf49, (s26, 192), (192, 1), 0), primals_38, out=buf51)
        del buf49
        del primals_38
        buf54 = empty_strided_cpu((192, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_110, linear_11, linear_15, mul_1536, mul_1537, sub_437, mul_1538, add_1348, mul_1539, view_113, permute_94, mm_50], Original ATen: [aten.view, aten._unsafe_view, aten.mul, aten.silu_backward, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf53, (192, s26), (1, 192), 0), view_31, out=buf54)
        del view_31
        assert_size_stride(primals_37, (192, 64), (64, 1), 'input')
        buf55 = buf37; del buf37  # reuse
        # Topologically Sorted Source Nodes: [view_110, linear_11, linear_15, mul_1536, mul_1537, sub_437, mul_1538, add_1348, mul_1539, view_113, linear_9, permute_96, mm_51], Original ATen: [aten.view, aten._unsafe_view, aten.mul, aten.silu_backward, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf53, (s26, 192), (192, 1), 0), primals_37, out=buf55)
        del buf53
        del primals_37
        assert_size_stride(primals_36, (64, ), (1, ), 'input')
        assert_size_stride(embedding_1, (1, s26, 64), (64*s26, 64, 1), 'input')
        assert_size_stride(mm_7, (s26, 64), (64, 1), 'input')
        assert_size_stride(rsqrt_7, (1, s26, 1), (s26, 1, 1), 'input')
        buf57 = buf45; del buf45  # reuse
        buf58 = buf46; del buf46  # reuse
        assert_size_stride(primals_35, (64, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_div_expand_mul_pow_sum_view_7(buf58, buf51, buf55, primals_36, embedding_1, mm_7, rsqrt_7, buf57, s26)
        del primals_36
        buf60 = buf31; del buf31  # reuse
        # Topologically Sorted Source Nodes: [view_116, attn_output_6, permute_100, mm_53], Original ATen: [aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf58, (s26, 64), (64, 1), 0), primals_35, out=buf60)
        del primals_35
        assert_size_stride(add_375, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'input')
        assert_size_stride(cat_4, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 'input')
        assert_size_stride(cat_5, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 'input')
        assert_size_stride(getitem_2, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'input')
        assert_size_stride(getitem_3, (1, 4, s26), (4*s26, s26, 1), 'input')
        # Topologically Sorted Source Nodes: [view_117, view_118, permute_102, tree_attention_backward_1], Original ATen: [aten.view, aten.transpose, replaycompile.tree_attention_backward]
        buf61 = torch.ops.replaycompile.tree_attention_backward.default(reinterpret_tensor(buf60, (1, 4, s26, 16), (64*s26, 16, 64, 1), 0), add_375, cat_4, cat_5, getitem_2, getitem_3, empty, primals_29, primals_31, primals_34, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0)
        del add_375
        del cat_4
        del cat_5
        del empty
        del getitem_3
        del primals_29
        del primals_31
        del primals_34
        buf64 = buf61[2]
        assert_size_stride(buf64, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16, 32, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf64 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        assert_size_stride(primals_17, (32, 64), (64, 1), 'input')
        buf66 = buf60; del buf60  # reuse
        # Topologically Sorted Source Nodes: [slice_36, permute_103, view_120, view_121, linear_4, permute_106, mm_55], Original ATen: [aten.slice, aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf64, (s26, 32), (32, 1), 32*s31), primals_17, out=buf66)
        del primals_17
        buf63 = buf61[1]
        assert_size_stride(buf63, (1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16, 32, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf63 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        buf67 = reinterpret_tensor(buf35, (1, 2, s26, 16), (32*s26, 16, 32, 1), 0); del buf35  # reuse
        assert_size_stride(primals_16, (16, ), (1, ), 'input')
        assert_size_stride(mm_3, (s26, 32), (32, 1), 'input')
        assert_size_stride(rsqrt_5, (1, s26, 2, 1), (2*s26, 2, 1, 1), 'input')
        buf69 = buf34; del buf34  # reuse
        buf70 = empty_strided_cpu((1, s26, 2, 16), (32*s26, 32, 16, 1), torch.float32)
        assert_size_stride(primals_15, (32, 64), (64, 1), 'input')
        cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_8(buf63, primals_20, primals_11, primals_16, mm_3, rsqrt_5, buf67, buf69, buf70, s26, s31, s86)
        del buf63
        del buf69
        del primals_16
        buf72 = reinterpret_tensor(buf41, (s26, 64), (64, 1), 0); del buf41  # reuse
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, full_default_8, cos, cos_1, cos_3, pack_rows_3, slice_38, mul_1548, slice_39, slice_40, neg_17, add_1360, mul_1549, add_1361, permute_108, mul_1552, linear_3, reshape_3, mul_1555, pow_31, mul_1556, mul_1557, expand_10, div_14, pow_32, mul_1558, mul_1559, add_1364, clone_4, view_124, view_125, linear_2, permute_111, mm_57], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.slice_backward, aten.cos, aten.slice, aten.neg, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf70, (s26, 32), (32, 1), 0), primals_15, out=buf72)
        del primals_15
        buf62 = buf61[0]
        assert_size_stride(buf62, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'torch.ops.replaycompile.tree_attention_backward.default')
        # buffer buf62 (op: torch.ops.replaycompile.tree_attention_backward.default) is assumed to be not aligned
        del buf61
        buf73 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16, 64, 1), torch.float32)
        assert_size_stride(primals_14, (16, ), (1, ), 'input')
        assert_size_stride(mm_1, (s26, 64), (64, 1), 'input')
        assert_size_stride(rsqrt_3, (1, s26, 4, 1), (4*s26, 4, 1, 1), 'input')
        buf75 = buf40; del buf40  # reuse
        buf76 = empty_strided_cpu((1, s26, 4, 16), (64*s26, 64, 16, 1), torch.float32)
        assert_size_stride(primals_13, (64, 64), (64, 1), 'input')
        cpp_fused__to_copy__unsafe_view_add_arange_cat_clone_cos_div_expand_index_select_mul_neg_pow_sin_slice_slice_backward_sum_transpose_unsqueeze_view_9(buf62, primals_20, primals_11, primals_14, mm_1, rsqrt_3, buf73, buf75, buf76, s26, s86)
        del buf62
        del buf75
        del primals_11
        del primals_14
        del primals_20
        buf78 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, cos, cos_1, cos_3, pack_rows_3, full_default_10, mul_1550, slice_41, slice_42, neg_18, add_1362, mul_1551, add_1363, permute_113, mul_1560, linear_1, reshape_1, mul_1563, pow_33, mul_1564, mul_1565, expand_11, div_15, pow_34, mul_1566, mul_1567, add_1366, clone_5, view_128, view_129, linear, permute_116, mm_59], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.cos, aten.slice_backward, aten.slice, aten.neg, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf76, (s26, 64), (64, 1), 0), primals_13, out=buf78)
        del primals_13
        assert_size_stride(rsqrt_1, (1, s26, 1), (s26, 1, 1), 'input')
        buf56 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        buf79 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        cpp_fused__unsafe_view_add_mul_sum_view_10(buf51, buf55, embedding_1, mm_7, rsqrt_7, buf66, buf72, buf78, rsqrt_1, buf56, buf79, s26)
        del buf51
        del buf55
        del mm_7
        del rsqrt_7
        buf59 = empty_strided_cpu((64, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [view_116, permute_98, transpose_9, reshape_13, attn_output_7, mm_52], Original ATen: [aten.view, aten.t, aten.transpose, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf58, (64, s26), (1, 64), 0), reinterpret_tensor(getitem_2, (s26, 64), (64, 1), 0), out=buf59)
        del getitem_2
        assert_size_stride(view_5, (s26, 64), (64, 1), 'input')
        buf65 = empty_strided_cpu((32, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [slice_36, permute_103, view_120, view_121, permute_104, mm_54], Original ATen: [aten.slice, aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf64, (32, s26), (1, 32), 32*s31), view_5, out=buf65)
        del buf64
        buf68 = empty_strided_cpu((1, 1, 1, 16), (16, 16, 16, 1), torch.float32)
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_neg_sin_slice_slice_backward_sum_transpose_unsqueeze_view_11(buf67, mm_3, rsqrt_5, buf68, s26)
        del buf67
        del mm_3
        del rsqrt_5
        buf71 = empty_strided_cpu((32, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, full_default_8, cos, cos_1, cos_3, pack_rows_3, slice_38, mul_1548, slice_39, slice_40, neg_17, add_1360, mul_1549, add_1361, permute_108, mul_1552, linear_3, reshape_3, mul_1555, pow_31, mul_1556, mul_1557, expand_10, div_14, pow_32, mul_1558, mul_1559, add_1364, clone_4, view_124, view_125, permute_109, mm_56], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.slice_backward, aten.cos, aten.slice, aten.neg, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf70, (32, s26), (1, 32), 0), view_5, out=buf71)
        del buf70
        buf74 = empty_strided_cpu((1, 1, 1, 16), (16, 16, 16, 1), torch.float32)
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_neg_sin_slice_slice_backward_sum_transpose_unsqueeze_view_12(buf73, mm_1, rsqrt_3, buf74, s26)
        del buf73
        del mm_1
        del rsqrt_3
        buf77 = empty_strided_cpu((64, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, sin, sin_1, sin_3, pack_rows_5, cos, cos_1, cos_3, pack_rows_3, full_default_10, mul_1550, slice_41, slice_42, neg_18, add_1362, mul_1551, add_1363, permute_113, mul_1560, linear_1, reshape_1, mul_1563, pow_33, mul_1564, mul_1565, expand_11, div_15, pow_34, mul_1566, mul_1567, add_1366, clone_5, view_128, view_129, permute_114, mm_58], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.sin, aten.index_select, aten.cos, aten.slice_backward, aten.slice, aten.neg, aten.transpose, aten._unsafe_view, aten.view, aten.pow, aten.expand, aten.div, aten.clone, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf76, (64, s26), (1, 64), 0), view_5, out=buf77)
        del buf76
        del view_5
        buf81 = empty_strided_cpu((32000, 64), (64, 1), torch.float32)
        assert_size_stride(primals_12, (64, ), (1, ), 'input')
        assert_size_stride(permute_3, (1, s26), (s26, 1), 'input')
        buf80 = buf57; del buf57  # reuse
        cpp_fused_add_div_embedding_dense_backward_expand_mul_pow_sum_view_13(buf66, buf72, buf78, primals_12, embedding_1, permute_3, buf58, rsqrt_1, buf81, buf80, s26)
        del buf58
        del buf66
        del buf72
        del buf78
        del buf80
        del embedding_1
        del permute_3
        del primals_12
        del rsqrt_1
        return (None, None, None, None, None, None, None, None, None, buf81, None, reinterpret_tensor(buf79, (64, ), (1, ), 0), buf77, reinterpret_tensor(buf74, (16, ), (1, ), 0), buf71, reinterpret_tensor(buf68, (16, ), (1, ), 0), buf65, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, buf59, reinterpret_tensor(buf56, (64, ), (1, ), 0), buf54, buf50, buf47, reinterpret_tensor(buf44, (64, ), (1, ), 0), buf42, reinterpret_tensor(buf39, (16, ), (1, ), 0), buf36, reinterpret_tensor(buf33, (16, ), (1, ), 0), buf30, buf24, reinterpret_tensor(buf21, (64, ), (1, ), 0), buf19, buf15, buf12, None, None, None, reinterpret_tensor(buf7, (64, ), (1, ), 0), buf5, None, None, None, None, None, None, None, None, None, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    primals_3 = 87
    primals_5 = 111
    primals_19 = 87
    primals_21 = 80
    primals_52 = 86
    primals_59 = 4
    primals_8 = 111
    primals_6 = 31
    primals_28 = 4
    primals_30 = 5
    primals_33 = 2
    primals_32 = 8
    primals_57 = 31
    primals_60 = 111
    sym_size_int_74 = 31
    sym_sum = 87
    primals_11 = rand_strided((8, ), (1, ), device='cpu', dtype=torch.float32)
    primals_12 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_13 = rand_strided((64, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_14 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_15 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_16 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_17 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_20 = rand_strided((87, ), (1, ), device='cpu', dtype=torch.int64)
    primals_29 = rand_strided((4, 2), (2, 1), device='cpu', dtype=torch.int64)
    primals_31 = rand_strided((5, ), (1, ), device='cpu', dtype=torch.int64)
    primals_34 = rand_strided((8, 2), (2, 1), device='cpu', dtype=torch.int64)
    primals_35 = rand_strided((64, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_36 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_37 = rand_strided((192, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_38 = rand_strided((192, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_39 = rand_strided((64, 192), (192, 1), device='cpu', dtype=torch.float32)
    primals_40 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_41 = rand_strided((64, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_42 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_43 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_44 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_45 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_46 = rand_strided((64, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_47 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_48 = rand_strided((192, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_49 = rand_strided((192, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_50 = rand_strided((64, 192), (192, 1), device='cpu', dtype=torch.float32)
    primals_53 = rand_strided((86, ), (1, ), device='cpu', dtype=torch.int64)
    primals_54 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_55 = rand_strided((32000, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_64 = rand_strided((4, ), (1, ), device='cpu', dtype=torch.float32)
    empty = rand_strided((0, ), (1, ), device='cpu', dtype=torch.int64)
    permute_3 = rand_strided((1, 87), (87, 1), device='cpu', dtype=torch.int64)
    embedding_1 = rand_strided((1, 87, 64), (5568, 64, 1), device='cpu', dtype=torch.float32)
    rsqrt_1 = rand_strided((1, 87, 1), (87, 1, 1), device='cpu', dtype=torch.float32)
    view_5 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    mm_1 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    rsqrt_3 = rand_strided((1, 87, 4, 1), (348, 4, 1, 1), device='cpu', dtype=torch.float32)
    mm_3 = rand_strided((87, 32), (32, 1), device='cpu', dtype=torch.float32)
    rsqrt_5 = rand_strided((1, 87, 2, 1), (174, 2, 1, 1), device='cpu', dtype=torch.float32)
    add_375 = rand_strided((1, 4, 87, 16), (5568, 16, 64, 1), device='cpu', dtype=torch.float32)
    cat_4 = rand_strided((1, 2, 167, 16), (5344, 2672, 16, 1), device='cpu', dtype=torch.float32)
    cat_5 = rand_strided((1, 2, 167, 16), (5344, 2672, 16, 1), device='cpu', dtype=torch.float32)
    getitem_2 = rand_strided((1, 4, 87, 16), (5568, 16, 64, 1), device='cpu', dtype=torch.float32)
    getitem_3 = rand_strided((1, 4, 87), (348, 87, 1), device='cpu', dtype=torch.float32)
    mm_7 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    rsqrt_7 = rand_strided((1, 87, 1), (87, 1, 1), device='cpu', dtype=torch.float32)
    view_31 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    mm_9 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    mm_11 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    view_39 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    add_609 = rand_strided((1, 87, 64), (5568, 64, 1), device='cpu', dtype=torch.float32)
    rsqrt_9 = rand_strided((1, 87, 1), (87, 1, 1), device='cpu', dtype=torch.float32)
    view_43 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    mm_15 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    rsqrt_11 = rand_strided((1, 87, 4, 1), (348, 4, 1, 1), device='cpu', dtype=torch.float32)
    mm_17 = rand_strided((87, 32), (32, 1), device='cpu', dtype=torch.float32)
    rsqrt_13 = rand_strided((1, 87, 2, 1), (174, 2, 1, 1), device='cpu', dtype=torch.float32)
    add_926 = rand_strided((1, 4, 87, 16), (5568, 16, 64, 1), device='cpu', dtype=torch.float32)
    cat_10 = rand_strided((1, 2, 167, 16), (5344, 2672, 16, 1), device='cpu', dtype=torch.float32)
    cat_11 = rand_strided((1, 2, 167, 16), (5344, 2672, 16, 1), device='cpu', dtype=torch.float32)
    getitem_6 = rand_strided((1, 4, 87, 16), (5568, 16, 64, 1), device='cpu', dtype=torch.float32)
    getitem_7 = rand_strided((1, 4, 87), (348, 87, 1), device='cpu', dtype=torch.float32)
    add_1043 = rand_strided((1, 87, 64), (5568, 64, 1), device='cpu', dtype=torch.float32)
    rsqrt_15 = rand_strided((1, 87, 1), (87, 1, 1), device='cpu', dtype=torch.float32)
    view_69 = rand_strided((87, 64), (64, 1), device='cpu', dtype=torch.float32)
    mm_23 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    mm_25 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    view_77 = rand_strided((87, 192), (192, 1), device='cpu', dtype=torch.float32)
    add_1160 = rand_strided((1, 87, 64), (5568, 64, 1), device='cpu', dtype=torch.float32)
    rsqrt_17 = rand_strided((1, 87, 1), (87, 1, 1), device='cpu', dtype=torch.float32)
    view_81 = rand_strided((86, 64), (64, 1), device='cpu', dtype=torch.float32)
    unsqueeze_9 = rand_strided((4, 31, 1), (111, 1, 1), device='cpu', dtype=torch.int64)
    cat_12 = rand_strided((1, 87, 32000), (2784000, 32000, 1), device='cpu', dtype=torch.float32)
    expand_1 = rand_strided((4, 31, 1), (31, 1, 1), device='cpu', dtype=torch.int64)
    expand_2 = rand_strided((4, 31, 1), (31, 1, 1), device='cpu', dtype=torch.bool)
    convert_element_type_1 = rand_strided((4, 31), (31, 1), device='cpu', dtype=torch.float32)
    exp_5 = rand_strided((4, 31), (31, 1), device='cpu', dtype=torch.float32)
    sum_3 = rand_strided((), (), device='cpu', dtype=torch.float32)
    unsqueeze_16 = rand_strided((87, 1), (1, 1), device='cpu', dtype=torch.float32)
    tangents_1 = rand_strided((), (), device='cpu', dtype=torch.float32)
    return [primals_3, primals_5, primals_19, primals_21, primals_52, primals_59, primals_8, primals_6, primals_28, primals_30, primals_33, primals_32, primals_57, primals_60, sym_size_int_74, sym_sum, primals_11, primals_12, primals_13, primals_14, primals_15, primals_16, primals_17, primals_20, primals_29, primals_31, primals_34, primals_35, primals_36, primals_37, primals_38, primals_39, primals_40, primals_41, primals_42, primals_43, primals_44, primals_45, primals_46, primals_47, primals_48, primals_49, primals_50, primals_53, primals_54, primals_55, primals_64, empty, permute_3, embedding_1, rsqrt_1, view_5, mm_1, rsqrt_3, mm_3, rsqrt_5, add_375, cat_4, cat_5, getitem_2, getitem_3, mm_7, rsqrt_7, view_31, mm_9, mm_11, view_39, add_609, rsqrt_9, view_43, mm_15, rsqrt_11, mm_17, rsqrt_13, add_926, cat_10, cat_11, getitem_6, getitem_7, add_1043, rsqrt_15, view_69, mm_23, mm_25, view_77, add_1160, rsqrt_17, view_81, unsqueeze_9, cat_12, expand_1, expand_2, convert_element_type_1, exp_5, sum_3, unsqueeze_16, tangents_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
