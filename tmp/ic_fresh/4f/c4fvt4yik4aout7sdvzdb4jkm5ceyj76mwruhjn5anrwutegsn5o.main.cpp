
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
        if(PyTuple_GET_SIZE(args) != 19) [[unlikely]]
            throw std::runtime_error("requires 19 args");
        kernel(parse_arg<float*>(args, 0), parse_arg<float*>(args, 1), parse_arg<float*>(args, 2), parse_arg<float*>(args, 3), parse_arg<float*>(args, 4), parse_arg<float*>(args, 5), parse_arg<int64_t*>(args, 6), parse_arg<bool*>(args, 7), parse_arg<float*>(args, 8), parse_arg<int64_t*>(args, 9), parse_arg<float*>(args, 10), parse_arg<float*>(args, 11), parse_arg<int64_t>(args, 12), parse_arg<int64_t>(args, 13), parse_arg<int64_t>(args, 14), parse_arg<int64_t>(args, 15), parse_arg<int64_t>(args, 16), parse_arg<int64_t>(args, 17), parse_arg<int64_t>(args, 18)); Py_RETURN_NONE;
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
