// SPDX-License-Identifier: MIT
/* C++ seed for gen-corpus.sh: namespaces, a template, a member, inlining. */
namespace ns
{
template <class T> struct Type {
	__attribute__((noinline)) T method(T);
	T inl(T x)
	{
		return x + 1;
	}
};

template <class T> T Type<T>::method(T x)
{
	return inl(x) * 2;
}

template struct Type<long>;
} // namespace ns

extern "C" void _start(void)
{
	ns::Type<long> t;
	volatile long v = t.method(3);
	(void)v;
	for (;;)
		;
}
