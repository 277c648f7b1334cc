
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

// Python bindings to call kernel():
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sstream>
#include <cstdlib>
#include <cerrno>

// This is defined in guards.cpp so we don't need to import PyTorch headers that are slooow.
// We manually link it below to workaround issues with fbcode build.
static void* (*_torchinductor_pyobject_tensor_data_ptr)(PyObject* obj);

template <typename T> static inline T parse_arg(PyObject* args, size_t n) {
    static_assert(std::is_pointer_v<T>, "arg type must be pointer or long");
    return static_cast<T>(_torchinductor_pyobject_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}
template <> inline int64_t parse_arg<int64_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if(result == -1 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return result;
}
template <> inline uintptr_t parse_arg<uintptr_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if(result == reinterpret_cast<void*>(-1) && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return reinterpret_cast<uintptr_t>(result);
}
template <> inline float parse_arg<float>(PyObject* args, size_t n) {
    auto result = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if(result == -1.0 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected float arg");
    return static_cast<float>(result);
}



static PyObject* kernel_py(PyObject* self, PyObject* args) {
    try {
        if(!PyTuple_CheckExact(args)) [[unlikely]]
            throw std::runtime_error("tuple args required");
        if(PyTuple_GET_SIZE(args) != 26) [[unlikely]]
            throw std::runtime_error("requires 26 args");
        kernel(parse_arg<float*>(args, 0), parse_arg<float*>(args, 1), parse_arg<float*>(args, 2), parse_arg<float*>(args, 3), parse_arg<float*>(args, 4), parse_arg<int64_t*>(args, 5), parse_arg<int64_t*>(args, 6), parse_arg<int64_t*>(args, 7), parse_arg<float*>(args, 8), parse_arg<float*>(args, 9), parse_arg<float*>(args, 10), parse_arg<float*>(args, 11), parse_arg<float*>(args, 12), parse_arg<int64_t*>(args, 13), parse_arg<bool*>(args, 14), parse_arg<float*>(args, 15), parse_arg<float*>(args, 16), parse_arg<float*>(args, 17), parse_arg<int64_t>(args, 18), parse_arg<int64_t>(args, 19), parse_arg<int64_t>(args, 20), parse_arg<int64_t>(args, 21), parse_arg<int64_t>(args, 22), parse_arg<int64_t>(args, 23), parse_arg<int64_t>(args, 24), parse_arg<int64_t>(args, 25)); Py_RETURN_NONE;
    } catch(std::exception const& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    } catch(...) {
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
        return nullptr;
    }
}

static PyMethodDef py_methods[] = {
    {"kernel", kernel_py, METH_VARARGS, ""},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef py_module =
    {PyModuleDef_HEAD_INIT, "kernel", NULL, -1, py_methods};

PyMODINIT_FUNC PyInit_kernel(void) {
    const char* str_addr = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    if(!str_addr) {
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR must be set");
        return nullptr;
    }

    char* endptr = nullptr;
    errno = 0;
    uintptr_t addr = std::strtoull(str_addr, &endptr, 10);
    if(errno != 0 || endptr == str_addr || addr == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Failed to parse _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
        return nullptr;
    }
    _torchinductor_pyobject_tensor_data_ptr =
        reinterpret_cast<decltype(_torchinductor_pyobject_tensor_data_ptr)>(addr);
    PyObject* module = PyModule_Create(&py_module);
    if (module == NULL) {
        return NULL;
    }
    #ifdef Py_GIL_DISABLED
        PyUnstable_Module_SetGIL(module, Py_MOD_GIL_NOT_USED);
    #endif
    return module;
}
