# AOT ID: ['1_forward']
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


cpp_fused_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_0 = async_compile.cpp_pybinding(['float*', 'const int64_t*', 'const int64_t*', 'const float*', 'const float*', 'const int64_t*', 'int64_t*', 'float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const int64_t* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const int64_t* in_ptr4,
                       int64_t* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr3,
                       float* out_ptr4,
                       float* out_ptr5,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2,
                       const int64_t ks3)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr2 = in_out_ptr0;
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(16L))
        {
            {
                if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L))))))
                {
                    auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                    auto tmp1 = ks1*ks2;
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
                        for (long x0_inner = 0; x0_inner < static_cast<int64_t>(16); x0_inner++)
                        {
                            tmpbuf[x0_inner] = static_cast<int64_t>(tmp9[x0_inner]);
                        }
                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                    }
                    ()
                    ;
                    TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp10) & (tmp10 < at::vec::VectorizedN<int64_t,2>(ks1*ks2)))).all_masked(), "index out of bounds: 0 <= tmp10 < ks1*ks2");
                    auto tmp12 =
                    [&]
                    {
                        __at_align__ std::array<int64_t, 16> tmpbuf;
                        #pragma GCC unroll 16
                        for (long x0_inner = 0; x0_inner < static_cast<int64_t>(16); x0_inner++)
                        {
                            tmpbuf[x0_inner] = in_ptr1[static_cast<int64_t>(tmp9[x0_inner])];
                        }
                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                    }
                    ()
                    ;
                    tmp12.store(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                }
                if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks0)))
                {
                    auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                    auto tmp1 = ks1*ks2;
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
                        tmp8.store(tmpbuf.data(), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                        return tmpbuf;
                    }
                    ()
                    ;
                    auto tmp10 =
                    [&]
                    {
                        __at_align__ std::array<int64_t, 16> tmpbuf;
                        #pragma GCC unroll 16
                        for (long x0_inner = 0; x0_inner < static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))); x0_inner++)
                        {
                            tmpbuf[x0_inner] = static_cast<int64_t>(tmp9[x0_inner]);
                        }
                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                    }
                    ()
                    ;
                    TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp10) & (tmp10 < at::vec::VectorizedN<int64_t,2>(ks1*ks2)))), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp10 < ks1*ks2");
                    auto tmp12 =
                    [&]
                    {
                        __at_align__ std::array<int64_t, 16> tmpbuf;
                        #pragma GCC unroll 16
                        for (long x0_inner = 0; x0_inner < static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))); x0_inner++)
                        {
                            tmpbuf[x0_inner] = in_ptr1[static_cast<int64_t>(tmp9[x0_inner])];
                        }
                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                    }
                    ()
                    ;
                    tmp12.store(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                }
            }
        }
    }
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
                                auto tmp0 = out_ptr0[static_cast<int64_t>(x0)];
                                auto tmp1 = tmp0;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                TORCH_CHECK((0 <= tmp2) & (tmp2 < 32000L), "index out of bounds: 0 <= tmp2 < 32000L");
                                auto tmp4 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp0), static_cast<int64_t>(16));
                                auto tmp5 = tmp4 * tmp4;
                                tmp4.store(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0));
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks0)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                        }
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
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = in_out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp3 = at::vec::Vectorized<float>(tmp2);
                            auto tmp4 = tmp1 * tmp3;
                            auto tmp5 = tmp0 * tmp4;
                            tmp5.store(out_ptr3 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = in_ptr4[static_cast<int64_t>(x0)];
                                auto tmp1 = ks1*ks2;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                auto tmp3 = int64_t(tmp0 + tmp2);
                                auto tmp4 = tmp0 < 0;
                                auto tmp5 = tmp4 ? tmp3 : tmp0;
                                auto tmp6 = tmp5;
                                auto tmp7 = c10::convert<int64_t>(tmp6);
                                TORCH_CHECK((0 <= tmp7) & (tmp7 < ks1*ks2), "index out of bounds: 0 <= tmp7 < ks1*ks2");
                                auto tmp9 = in_ptr1[static_cast<int64_t>(tmp5)];
                                auto tmp10 = tmp9;
                                auto tmp11 = c10::convert<int64_t>(tmp10);
                                TORCH_CHECK((0 <= tmp11) & (tmp11 < 32000L), "index out of bounds: 0 <= tmp11 < 32000L");
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp9), static_cast<int64_t>(16));
                                auto tmp14 = tmp13 * tmp13;
                                tmp_acc0_vec = tmp_acc0_vec + tmp14;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr4[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = in_ptr4[static_cast<int64_t>(x0)];
                            auto tmp15 = out_ptr4[static_cast<int64_t>(x0)];
                            auto tmp2 = ks1*ks2;
                            auto tmp3 = c10::convert<int64_t>(tmp2);
                            auto tmp4 = int64_t(tmp1 + tmp3);
                            auto tmp5 = tmp1 < 0;
                            auto tmp6 = tmp5 ? tmp4 : tmp1;
                            auto tmp7 = tmp6;
                            auto tmp8 = c10::convert<int64_t>(tmp7);
                            TORCH_CHECK((0 <= tmp8) & (tmp8 < ks1*ks2), "index out of bounds: 0 <= tmp8 < ks1*ks2");
                            auto tmp10 = in_ptr1[static_cast<int64_t>(tmp6)];
                            auto tmp11 = tmp10;
                            auto tmp12 = c10::convert<int64_t>(tmp11);
                            TORCH_CHECK((0 <= tmp12) & (tmp12 < 32000L), "index out of bounds: 0 <= tmp12 < 32000L");
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp10), static_cast<int64_t>(16));
                            auto tmp16 = static_cast<float>(64.0);
                            auto tmp17 = tmp15 / tmp16;
                            auto tmp18 = static_cast<float>(1e-06);
                            auto tmp19 = float(tmp17 + tmp18);
                            auto tmp20 = 1 / std::sqrt(tmp19);
                            auto tmp21 = at::vec::Vectorized<float>(tmp20);
                            auto tmp22 = tmp14 * tmp21;
                            auto tmp23 = tmp0 * tmp22;
                            tmp23.store(out_ptr5 + static_cast<int64_t>(x1 + 64L*x0));
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


cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_1 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       float* out_ptr0,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr1 = in_out_ptr0;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(4L*ks1); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(4L*ks1); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(4L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(16.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(4L)))) && x0 < static_cast<int64_t>(4L*ks1)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(4L))) + 4L*ks1));
                            auto tmp1 = static_cast<float>(16.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(4L))) + 4L*ks1));
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


cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_2 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       float* out_ptr0,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr1 = in_out_ptr0;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L*ks1); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L*ks1); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(8L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(16.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(8L)))) && x0 < static_cast<int64_t>(2L*ks1)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(8L))) + 2L*ks1));
                            auto tmp1 = static_cast<float>(16.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1), static_cast<int64_t>(8L))) + 2L*ks1));
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


cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mean_mul_neg_pow_rsqrt_sin_slice_transpose_tree_attention_unsqueeze_view_3 = async_compile.cpp_pybinding(['float*', 'float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'float*', 'float*', 'float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       const float* in_ptr0,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const int64_t* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       const float* in_ptr8,
                       const float* in_ptr10,
                       const float* in_ptr11,
                       const float* in_ptr12,
                       const int64_t* in_ptr13,
                       const float* in_ptr14,
                       const float* in_ptr15,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       float* out_ptr3,
                       float* out_ptr4,
                       float* out_ptr5,
                       float* out_ptr6,
                       float* out_ptr7,
                       float* out_ptr8,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto in_ptr9 = in_out_ptr0;
    auto in_ptr1 = in_out_ptr1;
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
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp12 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp11 = tmp10.neg();
                                auto tmp14 = tmp13 * tmp8;
                                auto tmp15 = tmp12 * tmp14;
                                tmp11.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                                tmp15.store(out_ptr1 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp8 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp6 = tmp5.neg();
                                auto tmp9 = tmp8 * tmp3;
                                auto tmp10 = tmp7 * tmp9;
                                tmp6.store(out_ptr2 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                                tmp10.store(out_ptr3 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp6 = in_ptr5[static_cast<int64_t>(x0)];
                                auto tmp15 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp24 = at::vec::Vectorized<float>::loadu(in_ptr7 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp7 = ks2;
                                auto tmp8 = c10::convert<int64_t>(tmp7);
                                auto tmp9 = int64_t(tmp6 + tmp8);
                                auto tmp10 = tmp6 < 0;
                                auto tmp11 = tmp10 ? tmp9 : tmp6;
                                auto tmp12 = tmp11;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                TORCH_CHECK((0 <= tmp13) & (tmp13 < ks2), "index out of bounds: 0 <= tmp13 < ks2");
                                auto tmp16 = c10::convert<float>(tmp12);
                                auto tmp17 = at::vec::Vectorized<float>(tmp16);
                                auto tmp18 = tmp17 * tmp15;
                                auto tmp19 = tmp18.cos();
                                auto tmp20 = static_cast<float>(1.0);
                                auto tmp21 = at::vec::Vectorized<float>(tmp20);
                                auto tmp22 = tmp19 * tmp21;
                                auto tmp23 = tmp5 * tmp22;
                                auto tmp25 = tmp18.sin();
                                auto tmp26 = tmp25 * tmp21;
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp23 + tmp27;
                                tmp28.store(out_ptr4 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr9 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr10[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp12 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr9 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp11 = tmp10.neg();
                                auto tmp14 = tmp13 * tmp8;
                                auto tmp15 = tmp12 * tmp14;
                                tmp11.store(out_ptr5 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                                tmp15.store(out_ptr6 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr11 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr12[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp8 = at::vec::Vectorized<float>::loadu(in_ptr11 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp6 = tmp5.neg();
                                auto tmp9 = tmp8 * tmp3;
                                auto tmp10 = tmp7 * tmp9;
                                tmp6.store(out_ptr7 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                                tmp10.store(out_ptr8 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr10[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp11 = in_ptr13[static_cast<int64_t>(x0)];
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr14 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(16));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp12 = ks2;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                auto tmp14 = int64_t(tmp11 + tmp13);
                                auto tmp15 = tmp11 < 0;
                                auto tmp16 = tmp15 ? tmp14 : tmp11;
                                auto tmp17 = tmp16;
                                auto tmp18 = c10::convert<int64_t>(tmp17);
                                TORCH_CHECK((0 <= tmp18) & (tmp18 < ks2), "index out of bounds: 0 <= tmp18 < ks2");
                                auto tmp21 = c10::convert<float>(tmp17);
                                auto tmp22 = at::vec::Vectorized<float>(tmp21);
                                auto tmp23 = tmp22 * tmp20;
                                auto tmp24 = tmp23.cos();
                                auto tmp25 = static_cast<float>(1.0);
                                auto tmp26 = at::vec::Vectorized<float>(tmp25);
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp10 * tmp27;
                                auto tmp30 = tmp23.sin();
                                auto tmp31 = tmp30 * tmp26;
                                auto tmp32 = tmp29 * tmp31;
                                auto tmp33 = tmp28 + tmp32;
                                tmp33.store(in_out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0));
                            }
                        }
                    }
                }
            }
        }
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp11 = in_ptr13[static_cast<int64_t>(x0)];
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr15 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(16));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp12 = ks2;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                auto tmp14 = int64_t(tmp11 + tmp13);
                                auto tmp15 = tmp11 < 0;
                                auto tmp16 = tmp15 ? tmp14 : tmp11;
                                auto tmp17 = tmp16;
                                auto tmp18 = c10::convert<int64_t>(tmp17);
                                TORCH_CHECK((0 <= tmp18) & (tmp18 < ks2), "index out of bounds: 0 <= tmp18 < ks2");
                                auto tmp21 = c10::convert<float>(tmp17);
                                auto tmp22 = at::vec::Vectorized<float>(tmp21);
                                auto tmp23 = tmp22 * tmp20;
                                auto tmp24 = tmp23.cos();
                                auto tmp25 = static_cast<float>(1.0);
                                auto tmp26 = at::vec::Vectorized<float>(tmp25);
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp10 * tmp27;
                                auto tmp30 = tmp23.sin();
                                auto tmp31 = tmp30 * tmp26;
                                auto tmp32 = tmp29 * tmp31;
                                auto tmp33 = tmp28 + tmp32;
                                tmp33.store(in_out_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
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


cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_sin_transpose_unsqueeze_view_4 = async_compile.cpp_pybinding(['const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const int64_t* in_ptr4,
                       const float* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       const float* in_ptr8,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       float* out_ptr3,
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
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x0 + 32L*x1), static_cast<int64_t>(16));
                                tmp0.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 16L*ks0*x0 + 16L*ks1*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks1); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x2 + 16L*x0 + 32L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr3[static_cast<int64_t>(x0 + 2L*x1)];
                                auto tmp6 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp15 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr5[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp24 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x2 + 16L*x1 + 16L*ks1*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp7 = ks2;
                                auto tmp8 = c10::convert<int64_t>(tmp7);
                                auto tmp9 = int64_t(tmp6 + tmp8);
                                auto tmp10 = tmp6 < 0;
                                auto tmp11 = tmp10 ? tmp9 : tmp6;
                                auto tmp12 = tmp11;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                TORCH_CHECK((0 <= tmp13) & (tmp13 < ks2), "index out of bounds: 0 <= tmp13 < ks2");
                                auto tmp16 = c10::convert<float>(tmp12);
                                auto tmp17 = at::vec::Vectorized<float>(tmp16);
                                auto tmp18 = tmp17 * tmp15;
                                auto tmp19 = tmp18.cos();
                                auto tmp20 = static_cast<float>(1.0);
                                auto tmp21 = at::vec::Vectorized<float>(tmp20);
                                auto tmp22 = tmp19 * tmp21;
                                auto tmp23 = tmp5 * tmp22;
                                auto tmp25 = tmp18.sin();
                                auto tmp26 = tmp25 * tmp21;
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp23 + tmp27;
                                tmp28.store(out_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 16L*ks0*x0 + 16L*ks1*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks0); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr7 + static_cast<int64_t>(x2 + 16L*x0 + 32L*x1), static_cast<int64_t>(16));
                                tmp0.store(out_ptr2 + static_cast<int64_t>(x2 + 16L*x1 + 16L*ks0*x0 + 16L*ks1*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(2L); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks1); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2 + 16L*x0 + 32L*x1), static_cast<int64_t>(16));
                                tmp0.store(out_ptr3 + static_cast<int64_t>(x2 + 16L*x1 + 16L*ks0*x0 + 16L*ks1*x0));
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


cpp_fused__unsafe_view_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_5 = async_compile.cpp_pybinding(['float*', 'const int64_t*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const int64_t* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       const float* in_ptr6,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr3,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2,
                       const int64_t ks3)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr2 = in_out_ptr0;
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
                                auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
                                auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = ks1*ks2;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                auto tmp3 = int64_t(tmp0 + tmp2);
                                auto tmp4 = tmp0 < 0;
                                auto tmp5 = tmp4 ? tmp3 : tmp0;
                                auto tmp6 = tmp5;
                                auto tmp7 = c10::convert<int64_t>(tmp6);
                                TORCH_CHECK((0 <= tmp7) & (tmp7 < ks1*ks2), "index out of bounds: 0 <= tmp7 < ks1*ks2");
                                auto tmp9 = in_ptr1[static_cast<int64_t>(tmp5)];
                                auto tmp10 = tmp9;
                                auto tmp11 = c10::convert<int64_t>(tmp10);
                                TORCH_CHECK((0 <= tmp11) & (tmp11 < 32000L), "index out of bounds: 0 <= tmp11 < 32000L");
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp9), static_cast<int64_t>(16));
                                auto tmp15 = tmp13 + tmp14;
                                auto tmp16 = tmp15 * tmp15;
                                tmp_acc0_vec = tmp_acc0_vec + tmp16;
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
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = in_ptr0[static_cast<int64_t>(x0)];
                            auto tmp15 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp17 = out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp2 = ks1*ks2;
                            auto tmp3 = c10::convert<int64_t>(tmp2);
                            auto tmp4 = int64_t(tmp1 + tmp3);
                            auto tmp5 = tmp1 < 0;
                            auto tmp6 = tmp5 ? tmp4 : tmp1;
                            auto tmp7 = tmp6;
                            auto tmp8 = c10::convert<int64_t>(tmp7);
                            TORCH_CHECK((0 <= tmp8) & (tmp8 < ks1*ks2), "index out of bounds: 0 <= tmp8 < ks1*ks2");
                            auto tmp10 = in_ptr1[static_cast<int64_t>(tmp6)];
                            auto tmp11 = tmp10;
                            auto tmp12 = c10::convert<int64_t>(tmp11);
                            TORCH_CHECK((0 <= tmp12) & (tmp12 < 32000L), "index out of bounds: 0 <= tmp12 < 32000L");
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp10), static_cast<int64_t>(16));
                            auto tmp16 = tmp14 + tmp15;
                            auto tmp18 = static_cast<float>(64.0);
                            auto tmp19 = tmp17 / tmp18;
                            auto tmp20 = static_cast<float>(1e-06);
                            auto tmp21 = float(tmp19 + tmp20);
                            auto tmp22 = 1 / std::sqrt(tmp21);
                            auto tmp23 = at::vec::Vectorized<float>(tmp22);
                            auto tmp24 = tmp16 * tmp23;
                            auto tmp25 = tmp0 * tmp24;
                            tmp25.store(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp3 = tmp2 * tmp2;
                                tmp_acc0_vec = tmp_acc0_vec + tmp3;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks3)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(ks3 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(ks3 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))));
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(1L))
            {
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp4 = in_out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp3 = tmp1 + tmp2;
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 * tmp5;
                            auto tmp7 = tmp0 * tmp6;
                            tmp7.store(out_ptr3 + static_cast<int64_t>(x1 + 64L*x0));
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


cpp_fused__unsafe_view_mul_silu_6 = async_compile.cpp_pybinding(['float*', 'const float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
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
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = tmp0.neg();
                        auto tmp2 = tmp1.exp();
                        auto tmp3 = static_cast<float>(1.0);
                        auto tmp4 = at::vec::Vectorized<float>(tmp3);
                        auto tmp5 = tmp2 + tmp4;
                        auto tmp6 = tmp0 / tmp5;
                        auto tmp8 = tmp6 * tmp7;
                        tmp8.store(in_out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__unsafe_view_mul_silu_7 = async_compile.cpp_pybinding(['const float*', 'const float*', 'float*', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
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
                        auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = tmp0.neg();
                        auto tmp2 = tmp1.exp();
                        auto tmp3 = static_cast<float>(1.0);
                        auto tmp4 = at::vec::Vectorized<float>(tmp3);
                        auto tmp5 = tmp2 + tmp4;
                        auto tmp6 = tmp0 / tmp5;
                        auto tmp8 = tmp6 * tmp7;
                        tmp8.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}
''')


cpp_fused__unsafe_view_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_8 = async_compile.cpp_pybinding(['float*', 'float*', 'float*', 'const int64_t*', 'const int64_t*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       float* in_out_ptr2,
                       const int64_t* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       const float* in_ptr6,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr3,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2,
                       const int64_t ks3)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr2 = in_out_ptr2;
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
                                auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
                                auto tmp14 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp16 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = ks1*ks2;
                                auto tmp2 = c10::convert<int64_t>(tmp1);
                                auto tmp3 = int64_t(tmp0 + tmp2);
                                auto tmp4 = tmp0 < 0;
                                auto tmp5 = tmp4 ? tmp3 : tmp0;
                                auto tmp6 = tmp5;
                                auto tmp7 = c10::convert<int64_t>(tmp6);
                                TORCH_CHECK((0 <= tmp7) & (tmp7 < ks1*ks2), "index out of bounds: 0 <= tmp7 < ks1*ks2");
                                auto tmp9 = in_ptr1[static_cast<int64_t>(tmp5)];
                                auto tmp10 = tmp9;
                                auto tmp11 = c10::convert<int64_t>(tmp10);
                                TORCH_CHECK((0 <= tmp11) & (tmp11 < 32000L), "index out of bounds: 0 <= tmp11 < 32000L");
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp9), static_cast<int64_t>(16));
                                auto tmp15 = tmp13 + tmp14;
                                auto tmp17 = tmp15 + tmp16;
                                auto tmp18 = tmp17 * tmp17;
                                tmp17.store(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
                                tmp_acc0_vec = tmp_acc0_vec + tmp18;
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
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp3 = static_cast<float>(64.0);
                            auto tmp4 = tmp2 / tmp3;
                            auto tmp5 = static_cast<float>(1e-06);
                            auto tmp6 = float(tmp4 + tmp5);
                            auto tmp7 = 1 / std::sqrt(tmp6);
                            auto tmp8 = at::vec::Vectorized<float>(tmp7);
                            auto tmp9 = tmp1 * tmp8;
                            auto tmp10 = tmp0 * tmp9;
                            tmp10.store(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0));
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L*ks3); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L*ks3)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp3 = at::vec::Vectorized<float>::loadu(in_out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp2 = tmp0 + tmp1;
                        auto tmp4 = tmp2 + tmp3;
                        tmp4.store(in_out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr2 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks3)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(ks3 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(ks3 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks3), static_cast<int64_t>(16L)))));
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks3); x0+=static_cast<int64_t>(1L))
            {
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = in_out_ptr2[static_cast<int64_t>(x0)];
                            auto tmp3 = at::vec::Vectorized<float>(tmp2);
                            auto tmp4 = tmp1 * tmp3;
                            auto tmp5 = tmp0 * tmp4;
                            tmp5.store(out_ptr3 + static_cast<int64_t>(x1 + 64L*x0));
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


cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_9 = async_compile.cpp_pybinding(['float*', 'float*', 'const float*', 'const float*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr3,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr2 = in_out_ptr1;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L*ks0); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L*ks0)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp2 = tmp0 + tmp1;
                        tmp2.store(in_out_ptr0 + static_cast<int64_t>(x0));
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp3 = tmp2 * tmp2;
                                tmp_acc0_vec = tmp_acc0_vec + tmp3;
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
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp4 = out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp3 = tmp1 + tmp2;
                            auto tmp5 = static_cast<float>(64.0);
                            auto tmp6 = tmp4 / tmp5;
                            auto tmp7 = static_cast<float>(1e-06);
                            auto tmp8 = float(tmp6 + tmp7);
                            auto tmp9 = 1 / std::sqrt(tmp8);
                            auto tmp10 = at::vec::Vectorized<float>(tmp9);
                            auto tmp11 = tmp3 * tmp10;
                            auto tmp12 = tmp0 * tmp11;
                            tmp12.store(out_ptr1 + static_cast<int64_t>(x1 + 64L*x0));
                        }
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr1 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks0)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                        }
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
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                            auto tmp2 = in_out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp3 = at::vec::Vectorized<float>(tmp2);
                            auto tmp4 = tmp1 * tmp3;
                            auto tmp5 = tmp0 * tmp4;
                            tmp5.store(out_ptr3 + static_cast<int64_t>(x1 + 64L*x0));
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


cpp_fused__unsafe_view_add_index_select_mean_mul_pow_rsqrt_10 = async_compile.cpp_pybinding(['float*', 'float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const int64_t* in_ptr5,
                       float* out_ptr0,
                       float* out_ptr2,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr1 = in_out_ptr1;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L*ks0); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L*ks0)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        auto tmp2 = tmp0 + tmp1;
                        tmp2.store(in_out_ptr0 + static_cast<int64_t>(x0));
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 + tmp1;
                                auto tmp4 = tmp2 + tmp3;
                                auto tmp5 = tmp4 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
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
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp1 = tmp0 * tmp0;
                                tmp_acc0_vec = tmp_acc0_vec + tmp1;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    in_out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr1 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks0)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                            auto tmp1 = static_cast<float>(64.0);
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 / tmp2;
                            auto tmp4 = static_cast<float>(1e-06);
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = tmp3 + tmp5;
                            auto tmp7 = tmp6.rsqrt();
                            tmp7.store(in_out_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks0), static_cast<int64_t>(16L)))));
                        }
                    }
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = in_ptr5[static_cast<int64_t>(0L)];
                            auto tmp2 = ks1;
                            auto tmp3 = c10::convert<int64_t>(tmp2);
                            auto tmp4 = int64_t(tmp1 + tmp3);
                            auto tmp5 = tmp1 < 0;
                            auto tmp6 = tmp5 ? tmp4 : tmp1;
                            auto tmp7 = tmp6;
                            auto tmp8 = c10::convert<int64_t>(tmp7);
                            TORCH_CHECK((0 <= tmp8) & (tmp8 < ks1), "index out of bounds: 0 <= tmp8 < ks1");
                            auto tmp10 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0 + 64L*tmp6), static_cast<int64_t>(16));
                            auto tmp11 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x0 + 64L*tmp6), static_cast<int64_t>(16));
                            auto tmp12 = tmp10 + tmp11;
                            auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 64L*tmp6), static_cast<int64_t>(16));
                            auto tmp14 = tmp12 + tmp13;
                            auto tmp15 = out_ptr0[static_cast<int64_t>(tmp6)];
                            auto tmp16 = static_cast<float>(64.0);
                            auto tmp17 = tmp15 / tmp16;
                            auto tmp18 = static_cast<float>(1e-06);
                            auto tmp19 = float(tmp17 + tmp18);
                            auto tmp20 = 1 / std::sqrt(tmp19);
                            auto tmp21 = at::vec::Vectorized<float>(tmp20);
                            auto tmp22 = tmp14 * tmp21;
                            auto tmp23 = tmp0 * tmp22;
                            tmp23.store(out_ptr2 + static_cast<int64_t>(x0));
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


cpp_fused_index_select_mul_11 = async_compile.cpp_pybinding(['const float*', 'const int64_t*', 'const float*', 'const float*', 'float*', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       float* out_ptr0,
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
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(64L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(64L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp1 = in_ptr1[static_cast<int64_t>(x0)];
                            auto tmp2 = ks1;
                            auto tmp3 = c10::convert<int64_t>(tmp2);
                            auto tmp4 = int64_t(tmp1 + tmp3);
                            auto tmp5 = tmp1 < 0;
                            auto tmp6 = tmp5 ? tmp4 : tmp1;
                            auto tmp7 = tmp6;
                            auto tmp8 = c10::convert<int64_t>(tmp7);
                            TORCH_CHECK((0 <= tmp8) & (tmp8 < ks1), "index out of bounds: 0 <= tmp8 < ks1");
                            auto tmp10 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 64L*tmp6), static_cast<int64_t>(16));
                            auto tmp11 = in_ptr3[static_cast<int64_t>(tmp6)];
                            auto tmp12 = at::vec::Vectorized<float>(tmp11);
                            auto tmp13 = tmp10 * tmp12;
                            auto tmp14 = tmp0 * tmp13;
                            tmp14.store(out_ptr0 + static_cast<int64_t>(x1 + 64L*x0));
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


cpp_fused__to_copy__unsafe_view_cat_clamp_div_exp_expand_index_logsumexp_lt_minimum_mul_neg_new_zeros_select_slice_squeeze_sub_sum_unsqueeze_where_12 = async_compile.cpp_pybinding(['float*', 'float*', 'const float*', 'const float*', 'const float*', 'const int64_t*', 'const int64_t*', 'const int64_t*', 'const float*', 'const float*', 'float*', 'float*', 'float*', 'int64_t*', 'bool*', 'float*', 'float*', 'float*', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t', 'const int64_t'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       const int64_t* in_ptr3,
                       const int64_t* in_ptr4,
                       const int64_t* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       int64_t* out_ptr4,
                       bool* out_ptr5,
                       float* out_ptr6,
                       float* out_ptr7,
                       float* out_ptr8,
                       const int64_t ks0,
                       const int64_t ks1,
                       const int64_t ks2,
                       const int64_t ks3,
                       const int64_t ks4,
                       const int64_t ks5,
                       const int64_t ks6,
                       const int64_t ks7)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr3 = in_out_ptr0;
    auto out_ptr9 = in_out_ptr1;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(32000L); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(32000L)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        tmp0.store(out_ptr0 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(32000L*ks0); x0+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(32000L*ks0)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        tmp0.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1L + ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = -std::numeric_limits<float>::infinity();
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(-std::numeric_limits<float>::infinity());
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32000L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(32000L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 32000L*x0), static_cast<int64_t>(16));
                                tmp_acc0_vec = at::vec::maximum(tmp_acc0_vec, tmp0);
                            }
                        }
                    }
                    tmp_acc0 = max_propagate_nan(tmp_acc0, at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return at::vec::maximum(x, y); }, tmp_acc0_vec));
                    out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1L + ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    at::vec::Vectorized<float> masked_tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    CascadeSumHelper<float, 4096> scalar_cascade_helper0(static_cast<int64_t>(32000L));
                    CascadeSumHelper<at::vec::Vectorized<float>, 4096> cascade_helper0(static_cast<int64_t>(2000L));
                    CascadeSumHelper<at::vec::Vectorized<float>, 4096> masked_cascade_helper0(static_cast<int64_t>(0L));
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32000L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(32000L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 32000L*x0), static_cast<int64_t>(16));
                                auto tmp1 = out_ptr2[static_cast<int64_t>(x0)];
                                auto tmp2 = std::abs(tmp1);
                                auto tmp3 = std::numeric_limits<float>::infinity();
                                auto tmp4 = tmp2 == tmp3;
                                auto tmp5 = static_cast<float>(0.0);
                                auto tmp6 = tmp4 ? tmp5 : tmp1;
                                auto tmp7 = at::vec::Vectorized<float>(tmp6);
                                auto tmp8 = tmp0 - tmp7;
                                auto tmp9 = tmp8.exp();
                                tmp_acc0_vec = cascade_sum_combine(tmp9, &cascade_helper0);
                            }
                        }
                    }
                    tmp_acc0 = cascade_sum_final(&scalar_cascade_helper0);
                    tmp_acc0_vec = cascade_sum_final(&cascade_helper0);
                    masked_tmp_acc0_vec = cascade_sum_final(&masked_cascade_helper0);
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec + masked_tmp_acc0_vec);
                    in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1L + ks0); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr3 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = tmp0.log();
                            auto tmp3 = tmp2.abs();
                            auto tmp4 = std::numeric_limits<float>::infinity();
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = at::vec::VecMask<float,1>(tmp3 == tmp5);
                            auto tmp7 = static_cast<float>(0.0);
                            auto tmp8 = at::vec::Vectorized<float>(tmp7);
                            auto tmp9 = decltype(tmp8)::blendv(tmp2, tmp8, tmp6.template cast<float,1>());
                            auto tmp10 = tmp1 + tmp9;
                            tmp10.store(in_out_ptr0 + static_cast<int64_t>(x0));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(1L + ks0)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr3 + static_cast<int64_t>(x0), static_cast<int64_t>(1L + ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))));
                            auto tmp2 = at::vec::Vectorized<float>::loadu(out_ptr2 + static_cast<int64_t>(x0), static_cast<int64_t>(1L + ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))));
                            auto tmp1 = tmp0.log();
                            auto tmp3 = tmp2.abs();
                            auto tmp4 = std::numeric_limits<float>::infinity();
                            auto tmp5 = at::vec::Vectorized<float>(tmp4);
                            auto tmp6 = at::vec::VecMask<float,1>(tmp3 == tmp5);
                            auto tmp7 = static_cast<float>(0.0);
                            auto tmp8 = at::vec::Vectorized<float>(tmp7);
                            auto tmp9 = decltype(tmp8)::blendv(tmp2, tmp8, tmp6.template cast<float,1>());
                            auto tmp10 = tmp1 + tmp9;
                            tmp10.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(1L + ks0 + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(1L + ks0), static_cast<int64_t>(16L)))));
                        }
                    }
                }
            }
        }
        #pragma omp single
        {
            {
                for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1*ks2); x0+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1*ks2), static_cast<int64_t>(16L))))))
                        {
                            auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr3 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            auto tmp1 = ks0;
                            auto tmp2 = c10::convert<int64_t>(tmp1);
                            auto tmp3 = at::vec::VectorizedN<int64_t,2>(tmp2);
                            auto tmp4 = at::vec::minimum(tmp0, tmp3);
                            auto tmp5 = 1L + ks0;
                            auto tmp6 = c10::convert<int64_t>(tmp5);
                            auto tmp7 = at::vec::VectorizedN<int64_t,2>(tmp6);
                            auto tmp8 = at::vec::VecMask<int64_t,2>(tmp0 < tmp7);
                            tmp4.store(out_ptr4 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                            tmp8.store(out_ptr5 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
                        }
                        if(C10_UNLIKELY(x0 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks1*ks2), static_cast<int64_t>(16L)))) && x0 < static_cast<int64_t>(ks1*ks2)))
                        {
                            auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr3 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1*ks2), static_cast<int64_t>(16L))) + ks1*ks2));
                            auto tmp1 = ks0;
                            auto tmp2 = c10::convert<int64_t>(tmp1);
                            auto tmp3 = at::vec::VectorizedN<int64_t,2>(tmp2);
                            auto tmp4 = at::vec::minimum(tmp0, tmp3);
                            auto tmp5 = 1L + ks0;
                            auto tmp6 = c10::convert<int64_t>(tmp5);
                            auto tmp7 = at::vec::VectorizedN<int64_t,2>(tmp6);
                            auto tmp8 = at::vec::VecMask<int64_t,2>(tmp0 < tmp7);
                            tmp4.store(out_ptr4 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1*ks2), static_cast<int64_t>(16L))) + ks1*ks2));
                            tmp8.store(out_ptr5 + static_cast<int64_t>(x0), static_cast<int64_t>((-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks1*ks2), static_cast<int64_t>(16L))) + ks1*ks2));
                        }
                    }
                }
            }
        }
        #pragma omp single
        {
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
                    {
                        for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)); x1+=static_cast<int64_t>(16L))
                        {
                            {
                                if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)), static_cast<int64_t>(16L))))))
                                {
                                    auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr4 + static_cast<int64_t>(ks5 + x1 + ((-1L)*ks4) + ks3*x0), static_cast<int64_t>(16));
                                    auto tmp1 = at::vec::convert<float,1,int64_t,2>(tmp0);
                                    tmp1.store(out_ptr6 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)))));
                                    tmp_acc0_vec = tmp_acc0_vec + tmp1;
                                }
                                if(C10_UNLIKELY(x1 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)), static_cast<int64_t>(16L)))) && x1 < static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5))))
                                {
                                    auto tmp0 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr4 + static_cast<int64_t>(ks5 + x1 + ((-1L)*ks4) + ks3*x0), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp1 = at::vec::convert<float,1,int64_t,2>(tmp0);
                                    tmp1.store(out_ptr6 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)))), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    tmp_acc0_vec = sum_masked_reduce(tmp_acc0_vec, tmp1, static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                }
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr7[static_cast<int64_t>(0L)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
                    {
                        for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)); x1+=static_cast<int64_t>(16L))
                        {
                            {
                                if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L))))))
                                {
                                    auto tmp0 = at::vec::VecMask<float,1>::from(out_ptr5 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(16));
                                    auto tmp1 = at::vec::VectorizedN<int64_t,2>::loadu(out_ptr4 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(16));
                                    auto tmp13 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(ks5 + x1 + ((-1L)*ks4) + ks6*x0), static_cast<int64_t>(16));
                                    auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x1 + ks7*x0), static_cast<int64_t>(16));
                                    auto tmp32 = in_ptr7[static_cast<int64_t>(x0)];
                                    auto tmp43 = at::vec::Vectorized<float>::loadu(out_ptr6 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)))), static_cast<int64_t>(16));
                                    auto tmp2 = 1L + ks0;
                                    auto tmp3 = c10::convert<int64_t>(tmp2);
                                    auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                    auto tmp5 = tmp1 + tmp4;
                                    auto tmp6 = static_cast<int64_t>(0);
                                    auto tmp7 = at::vec::VectorizedN<int64_t,2>(tmp6);
                                    auto tmp8 = at::vec::VecMask<int64_t,2>(tmp1 < tmp7);
                                    auto tmp9 = decltype(tmp5)::blendv(tmp1, tmp5, tmp8.template cast<int64_t,2>());
                                    auto tmp10 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        tmp9.store(tmpbuf.data(), static_cast<int64_t>(16));
                                        return tmpbuf;
                                    }
                                    ()
                                    ;
                                    auto tmp11 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = static_cast<int64_t>(tmp10[x1_inner]);
                                        }
                                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp11) & (tmp11 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))).all_masked(), "index out of bounds: 0 <= tmp11 < 1L + ks0");
                                    auto tmp14 = 32000L;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    auto tmp16 = at::vec::VectorizedN<int64_t,2>(tmp15);
                                    auto tmp17 = tmp13 + tmp16;
                                    auto tmp18 = at::vec::VecMask<int64_t,2>(tmp13 < tmp7);
                                    auto tmp19 = decltype(tmp17)::blendv(tmp13, tmp17, tmp18.template cast<int64_t,2>());
                                    auto tmp20 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        tmp19.store(tmpbuf.data(), static_cast<int64_t>(16));
                                        return tmpbuf;
                                    }
                                    ()
                                    ;
                                    auto tmp21 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = static_cast<int64_t>(tmp20[x1_inner]);
                                        }
                                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    TORCH_CHECK((at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp21) & (tmp21 < at::vec::VectorizedN<int64_t,2>(32000L)))).all_masked(), "index out of bounds: 0 <= tmp21 < 32000L");
                                    auto tmp23 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = in_ptr2[static_cast<int64_t>(tmp20[x1_inner] + 32000L*tmp10[x1_inner])];
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp24 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(16); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = in_out_ptr0[static_cast<int64_t>(tmp10[x1_inner])];
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp25 = tmp23 - tmp24;
                                    auto tmp26 = static_cast<float>(0.0);
                                    auto tmp27 = at::vec::Vectorized<float>(tmp26);
                                    auto tmp28 = decltype(tmp25)::blendv(tmp27, tmp25, tmp0.template cast<float,1>());
                                    auto tmp30 = tmp28 - tmp29;
                                    auto tmp31 = tmp30.exp();
                                    auto tmp33 = at::vec::Vectorized<float>(tmp32);
                                    auto tmp34 = tmp31 * tmp33;
                                    auto tmp35 = static_cast<float>(0.8);
                                    auto tmp36 = at::vec::Vectorized<float>(tmp35);
                                    auto tmp37 = at::vec::maximum(tmp31, tmp36);
                                    auto tmp38 = static_cast<float>(1.2);
                                    auto tmp39 = at::vec::Vectorized<float>(tmp38);
                                    auto tmp40 = at::vec::minimum(tmp37, tmp39);
                                    auto tmp41 = tmp40 * tmp33;
                                    auto tmp42 = at::vec::minimum(tmp34, tmp41);
                                    auto tmp44 = tmp42 * tmp43;
                                    tmp31.store(out_ptr8 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)))));
                                    tmp_acc0_vec = tmp_acc0_vec + tmp44;
                                }
                                if(C10_UNLIKELY(x1 >= static_cast<int64_t>(16L*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))) && x1 < static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5))))
                                {
                                    auto tmp0 = at::vec::VecMask<float,1>::from(out_ptr5 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp1 = at::vec::VectorizedN<int64_t,2>::loadu(out_ptr4 + static_cast<int64_t>(x1 + ks2*x0), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp13 = at::vec::VectorizedN<int64_t,2>::loadu(in_ptr5 + static_cast<int64_t>(ks5 + x1 + ((-1L)*ks4) + ks6*x0), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr6 + static_cast<int64_t>(x1 + ks7*x0), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp32 = in_ptr7[static_cast<int64_t>(x0)];
                                    auto tmp43 = at::vec::Vectorized<float>::loadu(out_ptr6 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks3 + ((-1L)*ks5)))), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    auto tmp2 = 1L + ks0;
                                    auto tmp3 = c10::convert<int64_t>(tmp2);
                                    auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                    auto tmp5 = tmp1 + tmp4;
                                    auto tmp6 = static_cast<int64_t>(0);
                                    auto tmp7 = at::vec::VectorizedN<int64_t,2>(tmp6);
                                    auto tmp8 = at::vec::VecMask<int64_t,2>(tmp1 < tmp7);
                                    auto tmp9 = decltype(tmp5)::blendv(tmp1, tmp5, tmp8.template cast<int64_t,2>());
                                    auto tmp10 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        tmp9.store(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                        return tmpbuf;
                                    }
                                    ()
                                    ;
                                    auto tmp11 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = static_cast<int64_t>(tmp10[x1_inner]);
                                        }
                                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    }
                                    ()
                                    ;
                                    TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp11) & (tmp11 < at::vec::VectorizedN<int64_t,2>(1L + ks0)))), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp11 < 1L + ks0");
                                    auto tmp14 = 32000L;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    auto tmp16 = at::vec::VectorizedN<int64_t,2>(tmp15);
                                    auto tmp17 = tmp13 + tmp16;
                                    auto tmp18 = at::vec::VecMask<int64_t,2>(tmp13 < tmp7);
                                    auto tmp19 = decltype(tmp17)::blendv(tmp13, tmp17, tmp18.template cast<int64_t,2>());
                                    auto tmp20 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        tmp19.store(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                        return tmpbuf;
                                    }
                                    ()
                                    ;
                                    auto tmp21 =
                                    [&]
                                    {
                                        __at_align__ std::array<int64_t, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = static_cast<int64_t>(tmp20[x1_inner]);
                                        }
                                        return at::vec::VectorizedN<int64_t,2>::loadu(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    }
                                    ()
                                    ;
                                    TORCH_CHECK((at::vec::VecMask<int64_t,2>::set(at::vec::VecMask<int64_t,2>::from(1), (at::vec::VecMask<int64_t,2>((at::vec::VectorizedN<int64_t,2>(0) <= tmp21) & (tmp21 < at::vec::VectorizedN<int64_t,2>(32000L)))), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))))).all_masked(), "index out of bounds: 0 <= tmp21 < 32000L");
                                    auto tmp23 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = in_ptr2[static_cast<int64_t>(tmp20[x1_inner] + 32000L*tmp10[x1_inner])];
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    }
                                    ()
                                    ;
                                    auto tmp24 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x1_inner = 0; x1_inner < static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))); x1_inner++)
                                        {
                                            tmpbuf[x1_inner] = in_out_ptr0[static_cast<int64_t>(tmp10[x1_inner])];
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    }
                                    ()
                                    ;
                                    auto tmp25 = tmp23 - tmp24;
                                    auto tmp26 = static_cast<float>(0.0);
                                    auto tmp27 = at::vec::Vectorized<float>(tmp26);
                                    auto tmp28 = decltype(tmp25)::blendv(tmp27, tmp25, tmp0.template cast<float,1>());
                                    auto tmp30 = tmp28 - tmp29;
                                    auto tmp31 = tmp30.exp();
                                    auto tmp33 = at::vec::Vectorized<float>(tmp32);
                                    auto tmp34 = tmp31 * tmp33;
                                    auto tmp35 = static_cast<float>(0.8);
                                    auto tmp36 = at::vec::Vectorized<float>(tmp35);
                                    auto tmp37 = at::vec::maximum(tmp31, tmp36);
                                    auto tmp38 = static_cast<float>(1.2);
                                    auto tmp39 = at::vec::Vectorized<float>(tmp38);
                                    auto tmp40 = at::vec::minimum(tmp37, tmp39);
                                    auto tmp41 = tmp40 * tmp33;
                                    auto tmp42 = at::vec::minimum(tmp34, tmp41);
                                    auto tmp44 = tmp42 * tmp43;
                                    tmp31.store(out_ptr8 + static_cast<int64_t>(x1 + x0*std::max(static_cast<int64_t>(1L), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)))), static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                    tmp_acc0_vec = sum_masked_reduce(tmp_acc0_vec, tmp44, static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5) + (-16L)*(c10::div_floor_integer(static_cast<int64_t>(ks4 + ks6 + ((-1L)*ks5)), static_cast<int64_t>(16L)))));
                                }
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr9[static_cast<int64_t>(0L)] = static_cast<float>(tmp_acc0);
                }
            }
        }
        #pragma omp single
        {
            {
                {
                    {
                        auto tmp0 = out_ptr9[static_cast<int64_t>(0L)];
                        auto tmp2 = out_ptr7[static_cast<int64_t>(0L)];
                        auto tmp1 = decltype(tmp0)(-tmp0);
                        auto tmp3 = tmp1 / tmp2;
                        in_out_ptr1[static_cast<int64_t>(0L)] = tmp3;
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
        primals_1, primals_2, primals_3, primals_4, primals_5, primals_6, primals_7, primals_8, primals_9, primals_10, primals_11, primals_12, primals_13, primals_14, primals_15, primals_16, primals_17, primals_18, primals_19, primals_20, primals_21, primals_22, primals_23, primals_24, primals_25, primals_26, primals_27, primals_28, primals_29, primals_30, primals_31, primals_32, primals_33, primals_34, primals_35, primals_36, primals_37, primals_38, primals_39, primals_40, primals_41, primals_42, primals_43, primals_44, primals_45, primals_46, primals_47, primals_48, primals_49, primals_50, primals_51, primals_52, primals_53, primals_54, primals_55, primals_56, primals_57, primals_58, primals_59, primals_60, primals_61, primals_62, primals_63, primals_64 = args
        args.clear()
        s56 = primals_1
        s26 = primals_3
        s30 = s26
        s86 = primals_5
        s83 = primals_6
        s99 = primals_7
        s7 = primals_8
        s31 = primals_21
        s41 = s31
        s38 = primals_24
        s27 = primals_26
        s4 = primals_28
        s28 = primals_30
        s77 = primals_32
        s100 = primals_33
        s3 = primals_52
        s37 = primals_56
        s50 = primals_57
        s40 = primals_59
        s10 = primals_60
        s81 = primals_62
        primals_9_size = primals_9.size()
        s25 = primals_9_size[0]
        s6 = s25
        buf0 = empty_strided_cpu((0, ), (1, ), torch.int64)
        assert_size_stride(primals_4, (s26, ), (1, ), 'input')
        assert_size_stride(primals_9, (s25, s7), (s7, 1), 'input')
        assert_size_stride(primals_10, (32000, 64), (64, 1), 'input')
        assert_size_stride(primals_12, (64, ), (1, ), 'input')
        buf1 = empty_strided_cpu((s26, ), (1, ), torch.int64)
        buf2 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        buf4 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf5 = reinterpret_tensor(buf4, (1, s26, 1), (s26, 1, 1), 0); del buf4  # reuse
        buf8 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        assert_size_stride(primals_2, (s31, ), (1, ), 'input')
        buf3 = empty_strided_cpu((1, s31, 1), (s31, 1, s31), torch.float32)
        buf6 = empty_strided_cpu((1, s31, 64), (64*s31, 64, 1), torch.float32)
        assert_size_stride(primals_13, (64, 64), (64, 1), 'input')
        cpp_fused_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_0(buf5, primals_4, primals_9, primals_10, primals_12, primals_2, buf1, buf2, buf8, buf3, buf6, s26, s25, s7, s31)
        del primals_4
        buf7 = empty_strided_cpu((s31, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [permute, flatten, rows, unsqueeze, pack_rows, inputs_embeds, pow_1, variance, add_4, rsqrt, hidden_states_2, hidden_states_4, linear], Original ATen: [aten.permute, aten.view, aten.index_select, aten.unsqueeze, aten.embedding, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf6, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_13, (64, 64), (1, 64), 0), out=buf7)
        buf9 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_3, hidden_states_5, linear, linear_1], Original ATen: [aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf8, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_13, (64, 64), (1, 64), 0), out=buf9)
        buf10 = empty_strided_cpu((1, s31, 4, 1), (4*s31, 4, 1, 4*s31), torch.float32)
        buf11 = empty_strided_cpu((1, s26, 4, 1), (4*s26, 4, 1, 4*s26), torch.float32)
        buf12 = reinterpret_tensor(buf11, (1, s26, 4, 1), (4*s26, 4, 1, 1), 0); del buf11  # reuse
        assert_size_stride(primals_15, (32, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_1(buf12, buf7, buf9, buf10, s31, s26)
        buf13 = empty_strided_cpu((s31, 32), (32, 1), torch.float32)
        # Topologically Sorted Source Nodes: [permute, flatten, rows, unsqueeze, pack_rows, inputs_embeds, pow_1, variance, add_4, rsqrt, hidden_states_2, hidden_states_4, linear, linear_2], Original ATen: [aten.permute, aten.view, aten.index_select, aten.unsqueeze, aten.embedding, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf6, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_15, (64, 32), (1, 64), 0), out=buf13)
        buf14 = empty_strided_cpu((s26, 32), (32, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_3, hidden_states_5, linear_1, linear_2, linear_3], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf8, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_15, (64, 32), (1, 64), 0), out=buf14)
        buf15 = empty_strided_cpu((1, s31, 2, 1), (2*s31, 2, 1, 2*s31), torch.float32)
        buf16 = empty_strided_cpu((1, s26, 2, 1), (2*s26, 2, 1, 2*s26), torch.float32)
        buf17 = reinterpret_tensor(buf16, (1, s26, 2, 1), (2*s26, 2, 1, 1), 0); del buf16  # reuse
        assert_size_stride(primals_17, (32, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_2(buf17, buf13, buf14, buf15, s31, s26)
        buf18 = empty_strided_cpu((s31, 32), (32, 1), torch.float32)
        # Topologically Sorted Source Nodes: [permute, flatten, rows, unsqueeze, pack_rows, inputs_embeds, pow_1, variance, add_4, rsqrt, hidden_states_2, hidden_states_4, linear, linear_4], Original ATen: [aten.permute, aten.view, aten.index_select, aten.unsqueeze, aten.embedding, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf6, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_17, (64, 32), (1, 64), 0), out=buf18)
        buf19 = empty_strided_cpu((s26, 32), (32, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_3, hidden_states_5, linear_1, linear_4, linear_5], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf8, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_17, (64, 32), (1, 64), 0), out=buf19)
        assert_size_stride(primals_14, (16, ), (1, ), 'input')
        buf22 = reinterpret_tensor(buf6, (1, 4, s31, 16), (64*s31, 16*s31, 16, 1), 0); del buf6  # reuse
        buf20 = reinterpret_tensor(buf22, (1, 4, s31, 8), (64*s31, 16*s31, 16, 1), 0)  # alias
        buf21 = reinterpret_tensor(buf22, (1, 4, s31, 8), (64*s31, 16*s31, 16, 1), 8)  # alias
        buf25 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16*s26, 16, 1), torch.float32)
        buf23 = reinterpret_tensor(buf25, (1, 4, s26, 8), (64*s26, 16*s26, 16, 1), 0)  # alias
        buf24 = reinterpret_tensor(buf25, (1, 4, s26, 8), (64*s26, 16*s26, 16, 1), 8)  # alias
        assert_size_stride(primals_20, (s26, ), (1, ), 'input')
        assert_size_stride(primals_11, (8, ), (1, ), 'input')
        buf26 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16, 64, 1), torch.float32)
        assert_size_stride(primals_16, (16, ), (1, ), 'input')
        buf29 = empty_strided_cpu((1, 2, s31, 16), (32*s31, 16*s31, 16, 1), torch.float32)
        buf27 = reinterpret_tensor(buf29, (1, 2, s31, 8), (32*s31, 16*s31, 16, 1), 0)  # alias
        buf28 = reinterpret_tensor(buf29, (1, 2, s31, 8), (32*s31, 16*s31, 16, 1), 8)  # alias
        buf32 = empty_strided_cpu((1, 2, s26, 16), (32*s26, 16*s26, 16, 1), torch.float32)
        buf30 = reinterpret_tensor(buf32, (1, 2, s26, 8), (32*s26, 16*s26, 16, 1), 0)  # alias
        buf31 = reinterpret_tensor(buf32, (1, 2, s26, 8), (32*s26, 16*s26, 16, 1), 8)  # alias
        assert_size_stride(primals_18, (s31, ), (1, ), 'input')
        buf33 = reinterpret_tensor(buf13, (1, 2, s31, 16), (32*s31, 16, 32, 1), 0); del buf13  # reuse
        buf34 = reinterpret_tensor(buf7, (1, 4, s31, 16), (64*s31, 16, 64, 1), 0); del buf7  # reuse
        assert_size_stride(primals_22, (s31, ), (1, ), 'input')
        assert_size_stride(primals_23, (1, 2), (2, 1), 'input')
        assert_size_stride(primals_25, (s38, ), (1, ), 'input')
        assert_size_stride(primals_27, (1, s27), (s27, 1), 'input')
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mean_mul_neg_pow_rsqrt_sin_slice_transpose_tree_attention_unsqueeze_view_3(buf33, buf34, primals_14, buf10, buf9, buf12, primals_20, primals_11, buf25, primals_16, buf15, buf14, buf17, primals_18, buf29, buf22, buf20, buf21, buf23, buf24, buf26, buf27, buf28, buf30, buf31, s31, s26, s86)
        del buf20
        del buf21
        del buf23
        del buf24
        del buf27
        del buf28
        del buf30
        del buf31
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, cos, cos_1, sin, sin_1, linear, reshape, pow_3, variance_2, add_6, rsqrt_2, hidden_states_8, mul_10, query_states, linear_4, reshape_4, value_states, cos_3, sin_3, pack_rows_2, mul_20, pack_rows_4, mul_24, q_embed, tree_attention_default], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.cos, aten.sin, aten._unsafe_view, aten.view, aten.pow, aten.mean, aten.rsqrt, aten.transpose, aten.index_select, replaycompile.tree_attention]
        buf35 = torch.ops.replaycompile.tree_attention.default(buf34, buf33, reinterpret_tensor(buf18, (1, 2, s31, 16), (32*s31, 16, 32, 1), 0), primals_22, primals_23, primals_25, primals_27, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0, sinks=None)
        buf36 = buf35[0]
        assert_size_stride(buf36, (1, 4, s31, 16), (64*s31, 16, 64, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf36 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        del buf35
        buf40 = empty_strided_cpu((1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), torch.float32)
        buf38 = reinterpret_tensor(buf40, (1, 2, s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 0)  # alias
        buf39 = reinterpret_tensor(buf40, (1, 2, s26, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 16*s31)  # alias
        buf43 = empty_strided_cpu((1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), torch.float32)
        buf41 = reinterpret_tensor(buf43, (1, 2, s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 0)  # alias
        buf42 = reinterpret_tensor(buf43, (1, 2, s26, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 16*s31)  # alias
        assert_size_stride(primals_29, (s4, 2), (2, 1), 'input')
        assert_size_stride(primals_31, (s28, ), (1, ), 'input')
        assert_size_stride(primals_34, (s77, s100), (s100, 1), 'input')
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_sin_transpose_unsqueeze_view_4(buf33, primals_16, buf14, buf17, primals_20, primals_11, buf32, buf18, buf19, buf38, buf39, buf41, buf42, s31, s26, s86)
        # Topologically Sorted Source Nodes: [tree_attention_default_1], Original ATen: [replaycompile.tree_attention]
        buf44 = torch.ops.replaycompile.tree_attention.default(buf26, buf40, buf43, buf0, primals_29, primals_31, primals_34, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0, sinks=None)
        buf45 = buf44[0]
        assert_size_stride(buf45, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf45 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        buf46 = buf44[1]
        assert_size_stride(buf46, (1, 4, s26), (4*s26, s26, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf46 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        del buf44
        assert_size_stride(primals_35, (64, 64), (64, 1), 'input')
        buf47 = reinterpret_tensor(buf34, (s31, 64), (64, 1), 0); del buf34  # reuse
        # Topologically Sorted Source Nodes: [transpose_7, reshape_12, attn_output_6], Original ATen: [aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf36, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_35, (64, 64), (1, 64), 0), out=buf47)
        del buf36
        buf48 = reinterpret_tensor(buf25, (s26, 64), (64, 1), 0); del buf25  # reuse
        # Topologically Sorted Source Nodes: [transpose_9, reshape_13, attn_output_6, attn_output_7], Original ATen: [aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf45, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_35, (64, 64), (1, 64), 0), out=buf48)
        assert_size_stride(primals_36, (64, ), (1, ), 'input')
        buf49 = buf3; del buf3  # reuse
        buf52 = reinterpret_tensor(buf22, (1, s31, 64), (64*s31, 64, 1), 0); del buf22  # reuse
        buf50 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf51 = reinterpret_tensor(buf50, (1, s26, 1), (s26, 1, 1), 0); del buf50  # reuse
        buf54 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        assert_size_stride(primals_37, (192, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_5(buf51, primals_2, primals_9, primals_10, buf47, primals_36, buf2, buf48, buf49, buf52, buf54, s31, s25, s7, s26)
        buf53 = empty_strided_cpu((s31, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [permute, flatten, rows, unsqueeze, pack_rows, inputs_embeds, attn_output_6, hidden_states_14, pow_7, variance_6, add_17, rsqrt_6, hidden_states_18, hidden_states_20, linear_9], Original ATen: [aten.permute, aten.view, aten.index_select, aten.unsqueeze, aten.embedding, aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf52, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_37, (64, 192), (1, 64), 0), out=buf53)
        buf55 = empty_strided_cpu((s26, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [attn_output_7, hidden_states_15, hidden_states_19, hidden_states_21, linear_9, linear_11], Original ATen: [aten._unsafe_view, aten.add, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf54, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_37, (64, 192), (1, 64), 0), out=buf55)
        assert_size_stride(primals_38, (192, 64), (64, 1), 'input')
        buf56 = empty_strided_cpu((s31, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [permute, flatten, rows, unsqueeze, pack_rows, inputs_embeds, attn_output_6, hidden_states_14, pow_7, variance_6, add_17, rsqrt_6, hidden_states_18, hidden_states_20, linear_9, linear_13], Original ATen: [aten.permute, aten.view, aten.index_select, aten.unsqueeze, aten.embedding, aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf52, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_38, (64, 192), (1, 64), 0), out=buf56)
        buf57 = empty_strided_cpu((s26, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [attn_output_7, hidden_states_15, hidden_states_19, hidden_states_21, linear_11, linear_13, linear_15], Original ATen: [aten._unsafe_view, aten.add, aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf54, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_38, (64, 192), (1, 64), 0), out=buf57)
        buf58 = reinterpret_tensor(buf53, (1, s31, 192), (192*s31, 192, 1), 0); del buf53  # reuse
        assert_size_stride(primals_39, (64, 192), (192, 1), 'input')
        cpp_fused__unsafe_view_mul_silu_6(buf58, buf56, s31)
        buf59 = reinterpret_tensor(buf52, (s31, 64), (64, 1), 0); del buf52  # reuse
        # Topologically Sorted Source Nodes: [linear_9, silu, linear_13, mul_40, down_proj], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf58, (s31, 192), (192, 1), 0), reinterpret_tensor(primals_39, (192, 64), (1, 192), 0), out=buf59)
        buf60 = empty_strided_cpu((1, s26, 192), (192*s26, 192, 1), torch.float32)
        cpp_fused__unsafe_view_mul_silu_7(buf55, buf57, buf60, s26)
        buf61 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [linear_11, silu_1, linear_15, mul_42, down_proj, down_proj_1], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf60, (s26, 192), (192, 1), 0), reinterpret_tensor(primals_39, (192, 64), (1, 192), 0), out=buf61)
        assert_size_stride(primals_40, (64, ), (1, ), 'input')
        buf62 = reinterpret_tensor(buf47, (1, s31, 64), (64*s31, 64, 1), 0); del buf47  # reuse
        buf64 = buf49; del buf49  # reuse
        buf67 = empty_strided_cpu((1, s31, 64), (64*s31, 64, 1), torch.float32)
        buf63 = reinterpret_tensor(buf61, (1, s26, 64), (64*s26, 64, 1), 0); del buf61  # reuse
        buf65 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf66 = reinterpret_tensor(buf65, (1, s26, 1), (s26, 1, 1), 0); del buf65  # reuse
        buf69 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        assert_size_stride(primals_41, (64, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_embedding_index_select_mean_mul_permute_pow_rsqrt_unsqueeze_view_8(buf62, buf63, buf66, primals_2, primals_9, primals_10, buf59, primals_40, buf2, buf48, buf64, buf67, buf69, s31, s25, s7, s26)
        del primals_10
        del primals_2
        buf68 = buf59; del buf59  # reuse
        # Topologically Sorted Source Nodes: [pow_9, variance_8, add_23, rsqrt_8, hidden_states_26, hidden_states_28, linear_19], Original ATen: [aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf67, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_41, (64, 64), (1, 64), 0), out=buf68)
        buf70 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_27, hidden_states_29, linear_19, linear_21], Original ATen: [aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf69, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_41, (64, 64), (1, 64), 0), out=buf70)
        buf71 = buf10; del buf10  # reuse
        buf72 = empty_strided_cpu((1, s26, 4, 1), (4*s26, 4, 1, 4*s26), torch.float32)
        buf73 = reinterpret_tensor(buf72, (1, s26, 4, 1), (4*s26, 4, 1, 1), 0); del buf72  # reuse
        assert_size_stride(primals_43, (32, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_1(buf73, buf68, buf70, buf71, s31, s26)
        buf74 = reinterpret_tensor(buf33, (s31, 32), (32, 1), 0); del buf33  # reuse
        # Topologically Sorted Source Nodes: [pow_9, variance_8, add_23, rsqrt_8, hidden_states_26, hidden_states_28, linear_19, linear_23], Original ATen: [aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf67, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_43, (64, 32), (1, 64), 0), out=buf74)
        buf75 = reinterpret_tensor(buf32, (s26, 32), (32, 1), 0); del buf32  # reuse
        # Topologically Sorted Source Nodes: [hidden_states_27, hidden_states_29, linear_21, linear_23, linear_25], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf69, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_43, (64, 32), (1, 64), 0), out=buf75)
        buf76 = buf15; del buf15  # reuse
        buf77 = empty_strided_cpu((1, s26, 2, 1), (2*s26, 2, 1, 2*s26), torch.float32)
        buf78 = reinterpret_tensor(buf77, (1, s26, 2, 1), (2*s26, 2, 1, 1), 0); del buf77  # reuse
        assert_size_stride(primals_45, (32, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_mean_pow_rsqrt_view_2(buf78, buf74, buf75, buf76, s31, s26)
        buf79 = buf18; del buf18  # reuse
        # Topologically Sorted Source Nodes: [pow_9, variance_8, add_23, rsqrt_8, hidden_states_26, hidden_states_28, linear_19, linear_27], Original ATen: [aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf67, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_45, (64, 32), (1, 64), 0), out=buf79)
        buf80 = buf19; del buf19  # reuse
        # Topologically Sorted Source Nodes: [hidden_states_27, hidden_states_29, linear_21, linear_27, linear_29], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf69, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_45, (64, 32), (1, 64), 0), out=buf80)
        assert_size_stride(primals_42, (16, ), (1, ), 'input')
        buf83 = reinterpret_tensor(buf67, (1, 4, s31, 16), (64*s31, 16*s31, 16, 1), 0); del buf67  # reuse
        buf81 = reinterpret_tensor(buf83, (1, 4, s31, 8), (64*s31, 16*s31, 16, 1), 0)  # alias
        buf82 = reinterpret_tensor(buf83, (1, 4, s31, 8), (64*s31, 16*s31, 16, 1), 8)  # alias
        buf86 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16*s26, 16, 1), torch.float32)
        buf84 = reinterpret_tensor(buf86, (1, 4, s26, 8), (64*s26, 16*s26, 16, 1), 0)  # alias
        buf85 = reinterpret_tensor(buf86, (1, 4, s26, 8), (64*s26, 16*s26, 16, 1), 8)  # alias
        buf87 = empty_strided_cpu((1, 4, s26, 16), (64*s26, 16, 64, 1), torch.float32)
        assert_size_stride(primals_44, (16, ), (1, ), 'input')
        buf90 = buf29; del buf29  # reuse
        buf88 = reinterpret_tensor(buf90, (1, 2, s31, 8), (32*s31, 16*s31, 16, 1), 0)  # alias
        buf89 = reinterpret_tensor(buf90, (1, 2, s31, 8), (32*s31, 16*s31, 16, 1), 8)  # alias
        buf93 = empty_strided_cpu((1, 2, s26, 16), (32*s26, 16*s26, 16, 1), torch.float32)
        buf91 = reinterpret_tensor(buf93, (1, 2, s26, 8), (32*s26, 16*s26, 16, 1), 0)  # alias
        buf92 = reinterpret_tensor(buf93, (1, 2, s26, 8), (32*s26, 16*s26, 16, 1), 8)  # alias
        buf94 = reinterpret_tensor(buf74, (1, 2, s31, 16), (32*s31, 16, 32, 1), 0); del buf74  # reuse
        buf95 = reinterpret_tensor(buf68, (1, 4, s31, 16), (64*s31, 16, 64, 1), 0); del buf68  # reuse
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mean_mul_neg_pow_rsqrt_sin_slice_transpose_tree_attention_unsqueeze_view_3(buf94, buf95, primals_42, buf71, buf70, buf73, primals_20, primals_11, buf86, primals_44, buf76, buf75, buf78, primals_18, buf90, buf83, buf81, buf82, buf84, buf85, buf87, buf88, buf89, buf91, buf92, s31, s26, s86)
        del buf71
        del buf76
        del buf81
        del buf82
        del buf84
        del buf85
        del buf88
        del buf89
        del buf90
        del buf91
        del buf92
        del primals_18
        # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, getitem_26, float_1, freqs, emb, cos, cos_1, sin, sin_1, cos_3, sin_3, pack_rows_2, pack_rows_4, linear_19, reshape_14, pow_11, variance_10, add_27, rsqrt_10, hidden_states_32, mul_50, query_states_2, linear_27, reshape_18, value_states_2, mul_60, mul_64, q_embed_2, tree_attention_default_2], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten._to_copy, aten.mul, aten.cat, aten.cos, aten.sin, aten.index_select, aten._unsafe_view, aten.view, aten.pow, aten.mean, aten.rsqrt, aten.transpose, replaycompile.tree_attention]
        buf96 = torch.ops.replaycompile.tree_attention.default(buf95, buf94, reinterpret_tensor(buf79, (1, 2, s31, 16), (32*s31, 16, 32, 1), 0), primals_22, primals_23, primals_25, primals_27, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0, sinks=None)
        del primals_22
        del primals_23
        del primals_25
        del primals_27
        buf97 = buf96[0]
        assert_size_stride(buf97, (1, 4, s31, 16), (64*s31, 16, 64, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf97 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        del buf96
        buf101 = empty_strided_cpu((1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), torch.float32)
        buf99 = reinterpret_tensor(buf101, (1, 2, s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 0)  # alias
        buf100 = reinterpret_tensor(buf101, (1, 2, s26, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 16*s31)  # alias
        buf104 = empty_strided_cpu((1, 2, s26 + s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), torch.float32)
        buf102 = reinterpret_tensor(buf104, (1, 2, s31, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 0)  # alias
        buf103 = reinterpret_tensor(buf104, (1, 2, s26, 16), (32*s26 + 32*s31, 16*s26 + 16*s31, 16, 1), 16*s31)  # alias
        cpp_fused__to_copy__unsafe_view_add_arange_cat_cos_index_select_mul_sin_transpose_unsqueeze_view_4(buf94, primals_44, buf75, buf78, primals_20, primals_11, buf93, buf79, buf80, buf99, buf100, buf102, buf103, s31, s26, s86)
        del buf79
        del buf80
        del buf93
        del buf94
        # Topologically Sorted Source Nodes: [tree_attention_default_3], Original ATen: [replaycompile.tree_attention]
        buf105 = torch.ops.replaycompile.tree_attention.default(buf87, buf101, buf104, buf0, primals_29, primals_31, primals_34, 0.25, [], 0, 0, positions=None, window=0, softcap=0.0, sinks=None)
        buf106 = buf105[0]
        assert_size_stride(buf106, (1, 4, s26, 16), (64*s26, 16, 64, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf106 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        buf107 = buf105[1]
        assert_size_stride(buf107, (1, 4, s26), (4*s26, s26, 1), 'torch.ops.replaycompile.tree_attention.default')
        # buffer buf107 (op: torch.ops.replaycompile.tree_attention.default) is assumed to be not aligned
        del buf105
        assert_size_stride(primals_46, (64, 64), (64, 1), 'input')
        buf108 = reinterpret_tensor(buf95, (s31, 64), (64, 1), 0); del buf95  # reuse
        # Topologically Sorted Source Nodes: [transpose_17, reshape_26, attn_output_12], Original ATen: [aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf97, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_46, (64, 64), (1, 64), 0), out=buf108)
        del buf97
        buf109 = reinterpret_tensor(buf86, (s26, 64), (64, 1), 0); del buf86  # reuse
        # Topologically Sorted Source Nodes: [transpose_19, reshape_27, attn_output_12, attn_output_13], Original ATen: [aten.transpose, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf106, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_46, (64, 64), (1, 64), 0), out=buf109)
        buf110 = reinterpret_tensor(buf109, (1, s26, 64), (64*s26, 64, 1), 0); del buf109  # reuse
        assert_size_stride(primals_47, (64, ), (1, ), 'input')
        buf111 = buf64; del buf64  # reuse
        buf114 = reinterpret_tensor(buf83, (1, s31, 64), (64*s31, 64, 1), 0); del buf83  # reuse
        buf112 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf113 = reinterpret_tensor(buf112, (1, s26, 1), (s26, 1, 1), 0); del buf112  # reuse
        buf116 = empty_strided_cpu((1, s26, 64), (64*s26, 64, 1), torch.float32)
        assert_size_stride(primals_48, (192, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_9(buf110, buf113, buf63, buf62, buf108, primals_47, buf111, buf114, buf116, s26, s31)
        buf115 = reinterpret_tensor(buf58, (s31, 192), (192, 1), 0); del buf58  # reuse
        # Topologically Sorted Source Nodes: [attn_output_12, hidden_states_38, pow_15, variance_14, add_41, rsqrt_14, hidden_states_42, hidden_states_44, linear_33], Original ATen: [aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf114, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_48, (64, 192), (1, 64), 0), out=buf115)
        buf117 = empty_strided_cpu((s26, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_43, hidden_states_45, linear_33, linear_35], Original ATen: [aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf116, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_48, (64, 192), (1, 64), 0), out=buf117)
        assert_size_stride(primals_49, (192, 64), (64, 1), 'input')
        buf118 = buf56; del buf56  # reuse
        # Topologically Sorted Source Nodes: [attn_output_12, hidden_states_38, pow_15, variance_14, add_41, rsqrt_14, hidden_states_42, hidden_states_44, linear_33, linear_37], Original ATen: [aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf114, (s31, 64), (64, 1), 0), reinterpret_tensor(primals_49, (64, 192), (1, 64), 0), out=buf118)
        buf119 = empty_strided_cpu((s26, 192), (192, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_43, hidden_states_45, linear_35, linear_37, linear_39], Original ATen: [aten.mul, aten.view, aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf116, (s26, 64), (64, 1), 0), reinterpret_tensor(primals_49, (64, 192), (1, 64), 0), out=buf119)
        buf120 = reinterpret_tensor(buf115, (1, s31, 192), (192*s31, 192, 1), 0); del buf115  # reuse
        assert_size_stride(primals_50, (64, 192), (192, 1), 'input')
        cpp_fused__unsafe_view_mul_silu_6(buf120, buf118, s31)
        del buf118
        buf121 = reinterpret_tensor(buf114, (s31, 64), (64, 1), 0); del buf114  # reuse
        # Topologically Sorted Source Nodes: [linear_33, silu_2, linear_37, mul_80, down_proj_2], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf120, (s31, 192), (192, 1), 0), reinterpret_tensor(primals_50, (192, 64), (1, 192), 0), out=buf121)
        del buf120
        buf122 = empty_strided_cpu((1, s26, 192), (192*s26, 192, 1), torch.float32)
        cpp_fused__unsafe_view_mul_silu_7(buf117, buf119, buf122, s26)
        buf123 = empty_strided_cpu((s26, 64), (64, 1), torch.float32)
        # Topologically Sorted Source Nodes: [linear_35, silu_3, linear_39, mul_82, down_proj_2, down_proj_3], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf122, (s26, 192), (192, 1), 0), reinterpret_tensor(primals_50, (192, 64), (1, 192), 0), out=buf123)
        buf124 = reinterpret_tensor(buf123, (1, s26, 64), (64*s26, 64, 1), 0); del buf123  # reuse
        buf125 = buf111; del buf111  # reuse
        buf126 = empty_strided_cpu((1, s26, 1), (s26, 1, s26), torch.float32)
        buf127 = reinterpret_tensor(buf126, (1, s26, 1), (s26, 1, 1), 0); del buf126  # reuse
        assert_size_stride(primals_54, (64, ), (1, ), 'input')
        assert_size_stride(primals_51, (1, ), (1, ), 'input')
        buf128 = empty_strided_cpu((1, 1, 64), (64, 64, 1), torch.float32)
        assert_size_stride(primals_55, (32000, 64), (64, 1), 'input')
        cpp_fused__unsafe_view_add_index_select_mean_mul_pow_rsqrt_10(buf124, buf127, buf110, buf62, buf108, buf121, primals_54, primals_51, buf125, buf128, s26, s31)
        del buf108
        del buf121
        del buf125
        del buf62
        del primals_51
        buf129 = empty_strided_cpu((1, 32000), (32000, 1), torch.float32)
        # Topologically Sorted Source Nodes: [attn_output_12, hidden_states_38, down_proj_2, hidden_states_46, pow_17, variance_16, add_47, rsqrt_16, hidden_states_50, index_select_11, mul_86, linear_43], Original ATen: [aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.index_select, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf128, (1, 64), (0, 1), 0), reinterpret_tensor(primals_55, (64, 32000), (1, 64), 0), out=buf129)
        del buf128
        assert_size_stride(primals_53, (s3, ), (1, ), 'input')
        buf130 = empty_strided_cpu((1, s3, 64), (64*s3, 64, 1), torch.float32)
        cpp_fused_index_select_mul_11(primals_54, primals_53, buf124, buf127, buf130, s3, s26)
        buf131 = empty_strided_cpu((s3, 32000), (32000, 1), torch.float32)
        # Topologically Sorted Source Nodes: [hidden_states_51, index_select_13, mul_88, linear_43, linear_45], Original ATen: [aten.mul, aten.index_select, aten.t, aten.view, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf130, (s3, 64), (64, 1), 0), reinterpret_tensor(primals_55, (64, 32000), (1, 64), 0), out=buf131)
        buf134 = empty_strided_cpu((1, 1 + s3, 32000), (32000 + 32000*s3, 32000, 1), torch.float32)
        buf132 = reinterpret_tensor(buf134, (1, 1, 32000), (32000 + 32000*s3, 32000, 1), 0)  # alias
        buf133 = reinterpret_tensor(buf134, (1, s3, 32000), (32000 + 32000*s3, 32000, 1), 32000)  # alias
        buf135 = empty_strided_cpu((1 + s3, 1), (1, 1 + s3), torch.float32)
        buf136 = empty_strided_cpu((1 + s3, ), (1, ), torch.float32)
        buf137 = buf136; del buf136  # reuse
        assert_size_stride(primals_58, (s25, s50), (s50, 1), 'input')
        buf138 = empty_strided_cpu((s25, s50), (s50, 1), torch.int64)
        buf139 = empty_strided_cpu((s25, s50), (s50, 1), torch.bool)
        assert_size_stride(primals_61, (s25, s10), (s10, 1), 'input')
        buf140 = empty_strided_cpu((s25, s83 + s10 + ((-1)*s86)), (max(1, s83 + s10 + ((-1)*s86)), 1), torch.float32)
        buf143 = empty_strided_cpu((), (), torch.float32)
        assert_size_stride(primals_63, (s25, s81), (s81, 1), 'input')
        assert_size_stride(primals_64, (s25, ), (1, ), 'input')
        buf141 = empty_strided_cpu((s25, s83 + s7 + ((-1)*s86)), (max(1, s83 + s7 + ((-1)*s86)), 1), torch.float32)
        buf142 = empty_strided_cpu((), (), torch.float32)
        buf144 = buf142; del buf142  # reuse
        cpp_fused__to_copy__unsafe_view_cat_clamp_div_exp_expand_index_logsumexp_lt_minimum_mul_neg_new_zeros_select_slice_squeeze_sub_sum_unsqueeze_where_12(buf137, buf144, buf129, buf131, buf134, primals_58, primals_61, primals_9, primals_63, primals_64, buf132, buf133, buf135, buf138, buf139, buf140, buf143, buf141, s3, s25, s50, s10, s83, s86, s7, s81)
        del buf129
        del buf131
        del buf135
        del primals_58
        del primals_61
        del primals_63
        return (buf144, primals_11, primals_12, primals_13, primals_14, primals_15, primals_16, primals_17, primals_20, primals_29, primals_31, primals_34, primals_35, primals_36, primals_37, primals_38, primals_39, primals_40, primals_41, primals_42, primals_43, primals_44, primals_45, primals_46, primals_47, primals_48, primals_49, primals_50, primals_53, primals_54, primals_55, primals_64, buf0, reinterpret_tensor(buf1, (1, s26), (s26, 1), 0), buf2, buf5, reinterpret_tensor(buf8, (s26, 64), (64, 1), 0), buf9, buf12, buf14, buf17, buf26, buf40, buf43, buf45, buf46, buf48, buf51, reinterpret_tensor(buf54, (s26, 64), (64, 1), 0), buf55, buf57, reinterpret_tensor(buf60, (s26, 192), (192, 1), 0), buf63, buf66, reinterpret_tensor(buf69, (s26, 64), (64, 1), 0), buf70, buf73, buf75, buf78, buf87, buf101, buf104, buf106, buf107, buf110, buf113, reinterpret_tensor(buf116, (s26, 64), (64, 1), 0), buf117, buf119, reinterpret_tensor(buf122, (s26, 192), (192, 1), 0), buf124, buf127, reinterpret_tensor(buf130, (s3, 64), (64, 1), 0), reinterpret_tensor(primals_9, (s25, s83 + s7 + ((-1)*s86), 1), (s7, 1, 1), s86 + ((-1)*s83)), buf134, reinterpret_tensor(buf138, (s25, s83 + s7 + ((-1)*s86), 1), (s50, 1, 1), 0), reinterpret_tensor(buf139, (s25, s83 + s7 + ((-1)*s86), 1), (s50, 1, 1), 0), buf140, buf141, buf143, reinterpret_tensor(buf137, (1 + s3, 1), (1, 1), 0), s26, s86, s26, s31, s3, s25, s7, s83, s4, s28, s100, s77, s50, s10, s83 + s7 + ((-1)*s86), 1 + s3, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    primals_1 = 80
    primals_2 = rand_strided((80, ), (1, ), device='cpu', dtype=torch.int64)
    primals_3 = 87
    primals_4 = rand_strided((87, ), (1, ), device='cpu', dtype=torch.int64)
    primals_5 = 111
    primals_6 = 31
    primals_7 = 4
    primals_8 = 111
    primals_9 = rand_strided((4, 111), (111, 1), device='cpu', dtype=torch.int64)
    primals_10 = rand_strided((32000, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_11 = rand_strided((8, ), (1, ), device='cpu', dtype=torch.float32)
    primals_12 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_13 = rand_strided((64, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_14 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_15 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_16 = rand_strided((16, ), (1, ), device='cpu', dtype=torch.float32)
    primals_17 = rand_strided((32, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_18 = rand_strided((80, ), (1, ), device='cpu', dtype=torch.int64)
    primals_19 = 87
    primals_20 = rand_strided((87, ), (1, ), device='cpu', dtype=torch.int64)
    primals_21 = 80
    primals_22 = rand_strided((80, ), (1, ), device='cpu', dtype=torch.int64)
    primals_23 = rand_strided((1, 2), (2, 1), device='cpu', dtype=torch.int64)
    primals_24 = 2
    primals_25 = rand_strided((2, ), (1, ), device='cpu', dtype=torch.int64)
    primals_26 = 2
    primals_27 = rand_strided((1, 2), (2, 1), device='cpu', dtype=torch.int64)
    primals_28 = 4
    primals_29 = rand_strided((4, 2), (2, 1), device='cpu', dtype=torch.int64)
    primals_30 = 5
    primals_31 = rand_strided((5, ), (1, ), device='cpu', dtype=torch.int64)
    primals_32 = 8
    primals_33 = 2
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
    primals_51 = rand_strided((1, ), (1, ), device='cpu', dtype=torch.int64)
    primals_52 = 86
    primals_53 = rand_strided((86, ), (1, ), device='cpu', dtype=torch.int64)
    primals_54 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)
    primals_55 = rand_strided((32000, 64), (64, 1), device='cpu', dtype=torch.float32)
    primals_56 = 4
    primals_57 = 31
    primals_58 = rand_strided((4, 31), (31, 1), device='cpu', dtype=torch.int64)
    primals_59 = 4
    primals_60 = 111
    primals_61 = rand_strided((4, 111), (111, 1), device='cpu', dtype=torch.int64)
    primals_62 = 31
    primals_63 = rand_strided((4, 31), (31, 1), device='cpu', dtype=torch.float32)
    primals_64 = rand_strided((4, ), (1, ), device='cpu', dtype=torch.float32)
    return [primals_1, primals_2, primals_3, primals_4, primals_5, primals_6, primals_7, primals_8, primals_9, primals_10, primals_11, primals_12, primals_13, primals_14, primals_15, primals_16, primals_17, primals_18, primals_19, primals_20, primals_21, primals_22, primals_23, primals_24, primals_25, primals_26, primals_27, primals_28, primals_29, primals_30, primals_31, primals_32, primals_33, primals_34, primals_35, primals_36, primals_37, primals_38, primals_39, primals_40, primals_41, primals_42, primals_43, primals_44, primals_45, primals_46, primals_47, primals_48, primals_49, primals_50, primals_51, primals_52, primals_53, primals_54, primals_55, primals_56, primals_57, primals_58, primals_59, primals_60, primals_61, primals_62, primals_63, primals_64]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat, device='cpu')


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
