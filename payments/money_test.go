package payments_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
)

// The messages ParseAmount answers with.
const (
	msgNumber   = "must be a number"
	msgPositive = "must be greater than 0"
	msgDecimals = "has more decimal places than the currency allows"
	msgLarge    = "is too large"
)

func TestMinorUnits(t *testing.T) {
	for currency, want := range map[string]int{
		"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2,
		"JPY": 0, "KRW": 0, "CLP": 0, "VND": 0, "XOF": 0,
		"KWD": 3, "BHD": 3, "JOD": 3, "OMR": 3, "TND": 3,
		"CLF": 4, "UYW": 4,
		// Not a currency code: the common case.
		"": 2, "US": 2, "USDX": 2, "PY G": 2,
	} {
		if got := payments.MinorUnits(currency); got != want {
			t.Errorf("MinorUnits(%q) = %d, want %d", currency, got, want)
		}
	}
}

func TestParseAmount(t *testing.T) {
	for _, c := range []struct {
		in, currency string
		want         int64
		msg          string
	}{
		// Exact: decimals are read as decimals, never through float64.
		{"0.1", "USD", 10, ""},
		{"0.2", "USD", 20, ""},
		{"0.3", "USD", 30, ""},
		{"19.99", "USD", 1999, ""},
		{"0.29", "USD", 29, ""}, // 0.29 * 100 is 28.999999999999996 in float64
		{"1.15", "USD", 115, ""},
		{"4.35", "USD", 435, ""},
		{"1e2", "USD", 10000, ""},
		{"1E2", "USD", 10000, ""},
		{"1e+2", "USD", 10000, ""},
		{"1.5e-1", "USD", 15, ""},
		{"150e-2", "USD", 150, ""},
		{"0.01", "USD", 1, ""},
		{"10.50", "USD", 1050, ""},
		{"10.500000", "USD", 1050, ""},
		{"100", "USD", 10000, ""},
		{"0.000000000000000001e16", "USD", 1, ""},
		// Decimals per currency.
		{"100", "JPY", 100, ""},
		{"100.0", "JPY", 100, ""},
		{"1.5e1", "JPY", 15, ""},
		{"100.5", "JPY", 0, msgDecimals},
		{"1.234", "KWD", 1234, ""},
		{"1.2345", "KWD", 0, msgDecimals},
		{"1.2345", "CLF", 12345, ""},
		{"1.23456", "CLF", 0, msgDecimals},
		{"0.001", "USD", 0, msgDecimals},
		{"19.999", "USD", 0, msgDecimals},
		{"1e-3", "USD", 0, msgDecimals},
		{"1e-1000000", "USD", 0, msgDecimals},
		{"1e-99999999999999999999", "USD", 0, msgDecimals},
		// At most 10^15 minor units.
		{"10000000000000", "USD", 1_000_000_000_000_000, ""},
		{"1e13", "USD", 1_000_000_000_000_000, ""},
		{"10000000000000.01", "USD", 0, msgLarge},
		{"1000000000000000", "JPY", 1_000_000_000_000_000, ""},
		{"1000000000000001", "JPY", 0, msgLarge},
		{"1e16", "JPY", 0, msgLarge},
		{"1e19", "USD", 0, msgLarge},
		{"99999999999999999999999999", "USD", 0, msgLarge},
		{"1e1000000", "USD", 0, msgLarge},
		{"1e99999999999999999999", "USD", 0, msgLarge},
		// Positive only.
		{"0", "USD", 0, msgPositive},
		{"0.00", "USD", 0, msgPositive},
		{"0e5", "USD", 0, msgPositive},
		{"-0", "USD", 0, msgPositive},
		{"-1", "USD", 0, msgPositive},
		{"-0.01", "USD", 0, msgPositive},
		{"-1e99999999", "USD", 0, msgPositive},
		// Only a JSON number is a number.
		{"", "USD", 0, msgNumber},
		{"abc", "USD", 0, msgNumber},
		{"1,5", "USD", 0, msgNumber},
		{"1.5.1", "USD", 0, msgNumber},
		{"NaN", "USD", 0, msgNumber},
		{"Inf", "USD", 0, msgNumber},
		{"Infinity", "USD", 0, msgNumber},
		{" 1", "USD", 0, msgNumber},
		{"1 ", "USD", 0, msgNumber},
		{"1/2", "USD", 0, msgNumber},
		{"0x10", "USD", 0, msgNumber},
		{"0b11", "USD", 0, msgNumber},
		{"0x1p-2", "USD", 0, msgNumber},
		{"1_000", "USD", 0, msgNumber},
		{"+1", "USD", 0, msgNumber},
		{".5", "USD", 0, msgNumber},
		{"5.", "USD", 0, msgNumber},
		{"01", "USD", 0, msgNumber},
		{"1e", "USD", 0, msgNumber},
		{"--1", "USD", 0, msgNumber},
		{"١", "USD", 0, msgNumber},
	} {
		got, msg := payments.ParseAmount(json.Number(c.in), c.currency)
		if got != c.want || msg != c.msg {
			t.Errorf("ParseAmount(%q, %s) = %d, %q; want %d, %q", c.in, c.currency, got, msg, c.want, c.msg)
		}
	}
}

// 0.1 + 0.2 is 0.3, exactly.
func TestAmountsAddExactly(t *testing.T) {
	a, _ := payments.ParseAmount("0.1", "USD")
	b, _ := payments.ParseAmount("0.2", "USD")
	if got := payments.FormatAmount(a+b, "USD"); got != "0.3" {
		t.Errorf("0.1 + 0.2 = %s", got)
	}
	var sum int64
	for range 10 {
		m, _ := payments.ParseAmount("0.1", "USD")
		sum += m
	}
	if got := payments.FormatAmount(sum, "USD"); got != "1" {
		t.Errorf("ten times 0.1 = %s", got)
	}
}

func TestFormatAmount(t *testing.T) {
	for _, c := range []struct {
		minor    int64
		currency string
		want     string
	}{
		{1050, "USD", "10.5"},
		{1000, "USD", "10"},
		{1999, "USD", "19.99"},
		{1, "USD", "0.01"},
		{10, "USD", "0.1"},
		{0, "USD", "0"},
		{5, "JPY", "5"},
		{1000, "JPY", "1000"},
		{1234, "KWD", "1.234"},
		{1230, "KWD", "1.23"},
		{1, "KWD", "0.001"},
		{12345, "CLF", "1.2345"},
		{10000, "CLF", "1"},
		{1_000_000_000_000_000, "USD", "10000000000000"},
		{999_999_999_999_999, "USD", "9999999999999.99"},
		{1_000_000_000_000_000, "JPY", "1000000000000000"},
		// Negative amounts never occur; formatting still holds for them.
		{-1050, "USD", "-10.5"},
		{-1, "USD", "-0.01"},
		{math.MinInt64, "USD", "-92233720368547758.08"},
		{math.MaxInt64, "JPY", "9223372036854775807"},
	} {
		if got := payments.FormatAmount(c.minor, c.currency); string(got) != c.want {
			t.Errorf("FormatAmount(%d, %s) = %s, want %s", c.minor, c.currency, got, c.want)
		}
	}
}

// jsonNumber is the syntax of a JSON number.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// A quick property test: for amounts drawn over the whole range (every
// magnitude from 1 to 10^15 minor units) in currencies of 0 to 4
// decimals, FormatAmount writes a JSON number without trailing zeros and
// with at most the currency's decimals, ParseAmount reads it back to the
// same amount, and so it does the other spellings of that number (trailing
// zeros, exponents).
func TestFormatParseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2026))
	currencies := []string{"USD", "JPY", "KWD", "CLF", "EUR"}
	for i := range 20000 {
		currency := currencies[i%len(currencies)]
		units := payments.MinorUnits(currency)
		// A magnitude from 10^0 to 10^15, then a value of it.
		digits := 1 + rng.IntN(16)
		lo := int64(1)
		for range digits - 1 {
			lo *= 10
		}
		minor := lo + rng.Int64N(lo*9)
		if i < 10 {
			minor = []int64{1, 9, 10, 99, 100, 101, 999_999_999_999_999, 1_000_000_000_000_000, 123_456_789, 5}[i]
		}
		minor = min(minor, 1_000_000_000_000_000)

		s := string(payments.FormatAmount(minor, currency))
		if !jsonNumber.MatchString(s) {
			t.Fatalf("FormatAmount(%d, %s) = %q: not a JSON number", minor, currency, s)
		}
		if dot := strings.IndexByte(s, '.'); dot >= 0 && (strings.HasSuffix(s, "0") || len(s)-dot-1 > units) {
			t.Fatalf("FormatAmount(%d, %s) = %q: trailing zeros or more than %d decimals", minor, currency, s, units)
		}
		if _, err := json.Marshal(json.Number(s)); err != nil {
			t.Fatalf("FormatAmount(%d, %s) = %q does not marshal: %v", minor, currency, s, err)
		}
		spellings := []string{s}
		mantissa, exp := strings.Replace(s, ".", "", 1), 0
		if dot := strings.IndexByte(s, '.'); dot >= 0 {
			exp = -(len(s) - dot - 1)
			spellings = append(spellings, s+"000")
		} else {
			spellings = append(spellings, s+".0")
		}
		mantissa = strings.TrimLeft(mantissa, "0")
		spellings = append(spellings, fmt.Sprintf("%se%d", mantissa, exp), fmt.Sprintf("%s0E%+d", mantissa, exp-1))
		for _, sp := range spellings {
			got, msg := payments.ParseAmount(json.Number(sp), currency)
			if got != minor || msg != "" {
				t.Fatalf("ParseAmount(%q, %s) = %d, %q; want %d (FormatAmount's %q)", sp, currency, got, msg, minor, s)
			}
		}
		// One minor unit more than the limit, or a tenth of the minor
		// unit more, never passes.
		if units < 4 {
			finer := s
			if !strings.Contains(finer, ".") {
				finer += "."
			}
			finer += strings.Repeat("0", units-(len(finer)-strings.IndexByte(finer, '.')-1)) + "1"
			if _, msg := payments.ParseAmount(json.Number(finer), currency); msg != msgDecimals {
				t.Fatalf("ParseAmount(%q, %s): %q, want %q", finer, currency, msg, msgDecimals)
			}
		}
	}
}
