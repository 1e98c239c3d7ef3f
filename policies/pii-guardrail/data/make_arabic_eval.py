#!/usr/bin/env python3
"""Writes arabic-pii-eval.json: labelled Arabic (Gulf and Egyptian usage, some mixed with English)
sentences for the PII guardrail's evaluation, in the shape of Presidio's synthetic set:
[{"full_text", "spans": [{"entity_type", "entity_value", "start_position", "end_position"}]}],
offsets in characters (code points), end exclusive.

Values are synthetic but structurally valid (Luhn / mod-97 / dates / governorates), generated with
a fixed seed so the file is reproducible: `python3 make_arabic_eval.py > arabic-pii-eval.json`.
Sentences were written by hand; {KIND:format} marks where a value goes. The negatives hold
dates, times, prices, quantities, order/invoice/tracking numbers and invalid look-alikes.
"""
import json
import random
import re

R = random.Random(6)
AR = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
FA = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")


def luhn_digit(body):
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    return str((10 - total % 10) % 10)


def digits(n):
    return "".join(R.choice("0123456789") for _ in range(n))


def saudi_id(first):
    body = first + digits(8)
    return body + luhn_digit(body)


def emirates_id():
    body = "784" + str(R.randint(1960, 2005)) + digits(7)
    d = body + luhn_digit(body)
    return d


def egypt_id():
    century = R.choice("23")
    yy = R.randint(50, 99) if century == "2" else R.randint(0, 8)
    mm = R.randint(1, 12)
    dd = R.randint(1, 28)
    gov = R.choice(["01", "02", "03", "12", "13", "21", "24", "25", "26", "88"])
    return f"{century}{yy:02d}{mm:02d}{dd:02d}{gov}{digits(4)}{R.randint(1, 9)}"


def card(prefix, length):
    body = prefix + digits(length - len(prefix) - 1)
    return body + luhn_digit(body)


def iban(country, bban):
    rearranged = bban + country + "00"
    num = "".join(str(int(c, 36)) for c in rearranged)
    check = 98 - int(num) % 97
    return f"{country}{check:02d}{bban}"


def group(s, sizes, sep=" "):
    out, at = [], 0
    for n in sizes:
        out.append(s[at:at + n])
        at += n
    if at < len(s):
        out.append(s[at:])
    return sep.join(out)


def by4(s):
    return " ".join(s[i:i + 4] for i in range(0, len(s), 4))


def value(kind, fmt):
    """Returns (entity_type, text)."""
    script = None
    if fmt.endswith("/ar"):
        script, fmt = AR, fmt[:-3]
    elif fmt.endswith("/fa"):
        script, fmt = FA, fmt[:-3]
    if kind == "PHONE":
        t = "PHONE_NUMBER"
        m = "5" + R.choice("0345689") + digits(7)  # Saudi/UAE mobile without the 0
        eg = R.choice(["10", "11", "12", "15"]) + digits(8)
        v = {
            "sa-local": "0" + m,
            "sa-local-sp": group("0" + m, [3, 3, 4]),
            "sa-local-dash": group("0" + m, [3, 3, 4], "-"),
            "sa-intl": "+966 " + group(m, [2, 3, 4]),
            "sa-intl-compact": "+966" + m,
            "sa-00": "00966" + m,
            "sa-land": "011 " + group(digits(7), [3, 4]),
            "ae-intl": "+971 " + group(m, [2, 3, 4]),
            "ae-local": "0" + group(m, [2, 3, 4], "-"),
            "ae-land": "04 " + group(digits(7), [3, 4]),
            "eg-local": "0" + eg,
            "eg-local-sp": group("0" + eg, [4, 3, 4]),
            "eg-intl": "+20 " + group(eg, [3, 3, 4]),
            "eg-land": "02 " + group("2" + digits(7), [4, 4]),
            "qa-intl": "+974 " + group(R.choice("3567") + digits(7), [4, 4]),
            "kw-local": group(R.choice("569") + digits(7), [4, 4]),
            "kw-intl": "+965 " + group(R.choice("569") + digits(7), [4, 4]),
            "bh-intl": "+973 " + group("3" + digits(7), [4, 4]),
            "om-intl": "+968 " + group("9" + digits(7), [4, 4]),
            "om-local": group("9" + digits(7), [4, 4]),
            "uk-intl": "+44 20 " + group(digits(8), [4, 4]),
            "qa-local": group(R.choice("3567") + digits(7), [4, 4]),
            "sa-bare": group(m, [2, 3, 4]),
            "sa-unified": "9200" + digits(5),
            "eg-bare": group("0" + eg, [4, 3, 4]),
            "sa-dots": group("0" + m, [3, 3, 4], "."),
            "us": "(" + R.choice("2345678") + digits(2) + ") " + R.choice("2345678") + digits(2) + "-" + digits(4),
        }[fmt]
    elif kind == "EMAIL":
        t = "EMAIL_ADDRESS"
        user = R.choice(["ahmed.alharbi", "m.elsayed", "sara_q", "noura.k", "khalid1990", "fatma.hassan", "o.alrashid"])
        dom = R.choice(["gmail.com", "outlook.sa", "company.com.eg", "mail.ae", "uni.edu.sa", "yahoo.com"])
        v = f"{user}@{dom}"
    elif kind == "CARD":
        t = "CREDIT_CARD"
        brand = {"visa": ("4", 16), "mc": ("5" + R.choice("12345"), 16), "mc2": ("2" + R.choice("23456"), 16),
                 "amex": ("37", 15), "mada": ("4" + digits(1), 16)}[fmt.split("-")[0]]
        c = card(*brand)
        v = by4(c) if brand[1] == 16 and "sp" in fmt else (group(c, [4, 4, 4, 4], "-") if "dash" in fmt else c)
        if brand[1] == 15 and "sp" in fmt:
            v = group(c, [4, 6, 5])
    elif kind == "IBAN":
        t = "IBAN_CODE"
        country = fmt.split("-")[0].upper()
        bban = {"SA": "80" + digits(18), "AE": "033" + digits(16), "EG": digits(25), "KW": "NBOK" + digits(22),
                "QA": "QNBA" + digits(21), "BH": "NBOB" + digits(14)}[country]
        i = iban(country, bban)
        v = by4(i) if "sp" in fmt else i
    elif kind == "IP":
        t = "IP_ADDRESS"
        v = {"v4": f"{R.randint(11, 223)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}",
             "v6": "2001:db8:" + ":".join(format(R.randint(0, 65535), "x") for _ in range(3)) + "::" + format(R.randint(1, 65535), "x")}[fmt]
    elif kind == "SAID":
        t = "SAUDI_ID"
        v = saudi_id("1" if fmt.startswith("citizen") else "2")
    elif kind == "EMID":
        t = "EMIRATES_ID"
        e = emirates_id()
        v = {"dash": group(e, [3, 4, 7, 1], "-"), "spaced": group(e, [3, 4, 7, 1])}.get(fmt, e)
    elif kind == "EGID":
        t = "EGYPTIAN_ID"
        v = egypt_id()
    elif kind == "SSN":
        t = "US_SSN"
        v = f"{R.randint(1, 665):03d}-{R.randint(1, 99):02d}-{R.randint(1, 9999):04d}"
    else:
        raise ValueError(kind)
    if script:
        v = v.translate(script)
    return t, v


POSITIVES = [
    # Phones, Gulf.
    "رقم جوالي {PHONE:sa-local/ar} تواصل معي بعد العصر",
    "ممكن ترسل لي الموقع على الواتس {PHONE:sa-local-sp}",
    "اتصل على {PHONE:sa-intl} إذا تأخر المندوب",
    "يا هلا، هذا رقمي الجديد {PHONE:sa-local-dash/ar} احفظه عندك",
    "للحجز والاستفسار: {PHONE:sa-intl-compact}",
    "كلمني على {PHONE:sa-00} لو ما رديت على الإيميل",
    "هاتف المكتب {PHONE:sa-land} والتحويلة ١٢",
    "رقم أبوي {PHONE:sa-local/fa} لو احتجتوا شي",
    "جوال المدير {PHONE:ae-intl/ar} وهو متواجد الصبح",
    "أرسلي الفاتورة على واتساب {PHONE:ae-local}",
    "تلفون المكتب في دبي {PHONE:ae-land}",
    "رقم خدمة العملاء في قطر {PHONE:qa-intl}",
    "واتساب {PHONE:kw-local} (الكويت) من ٩ الصبح لين ٥",
    "اتصلوا على {PHONE:kw-intl} للطلبات",
    "رقم الموبايل في البحرين {PHONE:bh-intl/ar}",
    "هاتفي في مسقط {PHONE:om-intl}",
    "جوالي العماني {PHONE:om-local/ar}",
    # Phones, Egypt.
    "ابعتلي على الموبايل {PHONE:eg-local/ar} يا باشا",
    "رقمي {PHONE:eg-local-sp} كلمني بالليل",
    "ده رقم الشغل {PHONE:eg-intl}",
    "تليفون البيت {PHONE:eg-land/ar} لو الموبايل مقفول",
    "ممكن تكلم أخويا على {PHONE:eg-local}؟",
    "اتصل بيا على {PHONE:eg-local/fa} بعد الساعة ٨",
    # Phones, mixed script.
    "Please call me on {PHONE:sa-local-sp/ar} بعد صلاة المغرب",
    "My UK number is {PHONE:uk-intl} والسعودي {PHONE:sa-local}",
    "مكتب نيويورك: {PHONE:us}",
    # E-mail.
    "إيميلي {EMAIL:-} راسلني عليه",
    "أرسل السيرة الذاتية إلى {EMAIL:-}، وشكراً",
    "البريد الإلكتروني: {EMAIL:-}",
    "ابعت الملفات على {EMAIL:-} النهارده",
    "Contact: {EMAIL:-} أو على الجوال {PHONE:sa-local/ar}",
    "تواصل مع الموارد البشرية ({EMAIL:-}) لتحديث بياناتك",
    # Cards.
    "رقم بطاقتي {CARD:visa-sp} وتنتهي ٠٨/٢٧",
    "دفعت ببطاقة مدى {CARD:mada/ar} وما وصلني إشعار",
    "الكارت بتاعي {CARD:mc-dash} اتسحب منه مبلغ غلط",
    "بطاقة الائتمان {CARD:mc2-sp} موقوفة ليش؟",
    "my amex {CARD:amex-sp} was charged twice",
    "رقم البطاقة {CARD:visa/ar} الرمز السري لا أرسله",
    "سددت الفاتورة بالفيزا {CARD:visa-dash}",
    # IBAN.
    "الآيبان حقي {IBAN:sa-sp} باسم محمد",
    "حوّل المبلغ على IBAN {IBAN:sa}",
    "رقم الحساب الدولي {IBAN:ae-sp}",
    "الآيبان المصري {IBAN:eg}",
    "حولوا على الحساب {IBAN:kw-sp} في بنك الكويت الوطني",
    "IBAN: {IBAN:qa} (QNB)",
    "رقم الآيبان البحريني {IBAN:bh-sp}",
    # IP.
    "الخادم على {IP:v4} ما يرد",
    "سجلات الدخول من العنوان {IP:v4} مشبوهة",
    "عنوان IPv6 للجهاز {IP:v6}",
    "جربت أدخل من {IP:v4} وطلع خطأ ٤٠٣",
    # Saudi id / iqama.
    "رقم الهوية الوطنية {SAID:citizen/ar}",
    "رقم الإقامة {SAID:resident} وتنتهي بعد شهرين",
    "هويتي {SAID:citizen} وتاريخ الميلاد ١٤١٥/٠٣/٢٢ هـ",
    "سجل مدني {SAID:citizen/fa}",
    "أبغى أجدد إقامة العامل رقم {SAID:resident/ar}",
    "National ID {SAID:citizen} للتحقق من الحساب",
    "رقم هوية الزوجة {SAID:citizen}",
    # Emirates id.
    "رقم الهوية الإماراتية {EMID:dash}",
    "Emirates ID: {EMID:dash/ar}",
    "هوية إماراتية رقم {EMID:compact}",
    "رقم بطاقة الهوية {EMID:dash} منتهية",
    # Egyptian id.
    "الرقم القومي {EGID:-/ar}",
    "رقمي القومي {EGID:-} ومكتوب في البطاقة",
    "بطاقة الرقم القومي {EGID:-/ar} ضاعت مني",
    "محتاج أحدث بياناتي، الرقم القومي: {EGID:-}",
    "الرقم القومي للطفل {EGID:-}",
    # SSN.
    "رقم الضمان الاجتماعي الأمريكي SSN {SSN:-}",
    "my SSN is {SSN:-} عشان الضرايب",
    # Several at once.
    "الاسم: نورة القحطاني، الهوية {SAID:citizen/ar}، الجوال {PHONE:sa-local/ar}، الإيميل {EMAIL:-}",
    "بيانات العميل: {EGID:-} / {PHONE:eg-local} / {EMAIL:-}",
    "حوّل على {IBAN:sa-sp} وأرسل الإيصال على {PHONE:sa-intl}",
    "الموظف {EMID:dash} جواله {PHONE:ae-intl} وبريده {EMAIL:-}",
    "دخل من {IP:v4} واستخدم البطاقة {CARD:visa-sp}",
    # Harder: unusual layouts, cue words after the number, numbers with no cue at all.
    "رقمي {PHONE:qa-local/ar} على الواتس",
    "كلم أبو فهد {PHONE:kw-local}",
    "{PHONE:sa-local/ar} هذا جوالي الجديد",
    "جوالي (+966) {PHONE:sa-bare}",
    "رقم الموحد للشركة {PHONE:sa-unified} اتصل عليه",
    "رقمي +2 {PHONE:eg-bare}",
    "جوال: {PHONE:sa-dots}",
    "رقم الهوية الإماراتية {EMID:spaced/ar}",
    "الهوية رقم {SAID:citizen} والجوال {PHONE:sa-local}",
    "ابعت على {EMAIL:-} أو {EMAIL:-}",
    "الإيميل الرسمي {EMAIL:-}.",
    "الفيزا {CARD:visa-sp/fa} ما تشتغل أونلاين",
    "IBAN {IBAN:sa-sp/ar}",
    "الرقم القومي بتاع والدتي {EGID:-/fa}",
    "السيرفر {IP:v4}:8080 واقف",
]

NEGATIVES = [
    "موعدك يوم ٢٠٢٤/٠٣/١٥ الساعة ١٠:٣٠ صباحاً",
    "التاريخ ١٤٤٥/٠٩/٠١ هـ الموافق 2024-03-11",
    "السعر ١٬٢٥٠ ريال شامل الضريبة",
    "رقم الطلب 1000000008 قيد الشحن",
    "رقم الطلب ٢٠٠٤٥٦٧٨٩١ وصل؟",
    "فاتورة رقم 29501023201952 مستحقة",
    "رقم الشحنة 784198012345678 متأخرة",
    "رقم التتبع ٠٥٠١٢٣٤٥٦٧٨٩٠١ في أرامكس",
    "المبلغ ٤٥٠٠ جنيه والباقي ٢٣٠٠",
    "الكمية 1500 كرتون والمجموع 3750.50 درهم",
    "حجزت رحلة SV1234 يوم 15-04-2025",
    "عدد سكان الرياض حوالي ٧٦٠٠٠٠٠ نسمة",
    "الإصدار 2.3.1.4.5 فيه مشاكل",
    "الاجتماع 10:30 إلى 12:45",
    "الرمز البريدي ١٢٣٤٥ والحي العليا",
    "صندوق بريد 11564 الرياض 11431",
    "اشتريت ٣ كيلو بـ ٩٩.٥٠ ريال",
    "رقم العقد 2000000006-ب للمشروع",
    "رقم الموديل 4111111111111112 غير متوفر",
    "البطاقة رقم 4111 1111 1111 1112 مرفوضة",
    "الآيبان SA03 8000 0000 6080 1016 7518 غلط في رقم واحد",
    "الهوية 1000000000 غير صحيحة",
    "الرقم القومي 29502303201951 تاريخ مستحيل",
    "الرقم القومي 29501027701952 محافظة غير موجودة",
    "Emirates ID 784-1980-1234567-9 رقم التحقق خطأ",
    "كود الخصم SAVE2024 صالح حتى 31/12/2024",
    "نسبة النمو ٣.٥٪ في الربع الثاني",
    "رقم اللوحة أ ب ج ١٢٣٤",
    "الصفحة ١٢٣ من ٤٥٦",
    "سنة 1445 هـ و2024 م",
    "رقم التذكرة 0501234567-TK في النظام",
    "المرجع INV-2024-0501234567",
    "درجة الحرارة ٤٥ مئوية والرطوبة ٦٠٪",
    "رصيدك ١٥٠٠٠٫٧٥ ريال",
    "طلبية رقم 55512345678 بانتظار الدفع",
    "ISBN 978-9953-87-123-4 للكتاب",
    "الجلسة رقم 3 في القاعة 12 الدور 4",
]

PLACE = re.compile(r"\{(\w+):([^}]*)\}")


def build(template):
    out, spans, at = "", [], 0
    for m in PLACE.finditer(template):
        out += template[at:m.start()]
        kind, fmt = m.group(1), m.group(2)
        t, v = value(kind, fmt)
        start = len(out)
        out += v
        spans.append({"entity_type": t, "entity_value": v, "start_position": start, "end_position": len(out)})
        at = m.end()
    out += template[at:]
    return {"full_text": out, "spans": spans}


records = [build(t) for t in POSITIVES] + [{"full_text": t, "spans": []} for t in NEGATIVES]
print(json.dumps(records, ensure_ascii=False, indent=1))
