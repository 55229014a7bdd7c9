"""The bundled XCOPA sample: hand-written COPA-style items (not XCOPA's own) in the Hub's exact layout and schema.

``python -m xlt.assets.make_xcopa_sample xlt/assets/demo/xcopa`` rewrites the parquet files (deterministic).
"""
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(sys.argv[1])
Q = ["effect", "cause", "effect", "cause", "cause", "effect", "effect", "cause"]
L = [0, 0, 1, 0, 0, 1, 1, 1]
VQ = ["cause", "effect", "cause", "effect", "cause", "effect"]
VL = [0, 0, 1, 1, 0, 1]
DATA = {
 "it": ([("Il bicchiere è caduto dal tavolo.", "Si è rotto sul pavimento.", "Si è riempito d'acqua."),
         ("La ragazza ha messo il cappotto.", "Fuori faceva freddo.", "Splendeva il sole."),
         ("L'uomo ha perso l'autobus.", "Ha comprato un cappello nuovo.", "È arrivato tardi al lavoro."),
         ("Le piante del giardino sono morte.", "Nessuno le ha annaffiate.", "Pioveva ogni giorno."),
         ("La bambina ha riso forte.", "Suo fratello ha raccontato una barzelletta.", "Ha perso il suo giocattolo."),
         ("Le luci si sono spente.", "Abbiamo aperto il frigorifero.", "Abbiamo acceso una candela."),
         ("La strada era coperta di ghiaccio.", "Gli uccelli cantavano.", "Le auto andavano piano."),
         ("La donna ha bevuto un bicchiere d'acqua.", "Aveva sonno.", "Aveva sete.")],
        [("Il bambino ha pianto.", "Aveva fame.", "Dormiva."),
         ("La porta era chiusa a chiave.", "Ho usato la mia chiave.", "Ho dipinto il muro."),
         ("Il pane era bruciato.", "La farina era fresca.", "Il forno era troppo caldo."),
         ("La studentessa ha studiato tutta la notte.", "Ha dimenticato il suo nome.", "Ha superato l'esame."),
         ("Il gelato si è sciolto.", "È stato lasciato al sole.", "È stato tenuto nel congelatore."),
         ("Il ragazzo era stanco.", "Ha corso una maratona.", "È andato a letto presto.")]),
 "id": ([("Gelas itu jatuh dari meja.", "Gelas itu pecah di lantai.", "Gelas itu terisi air."),
         ("Gadis itu memakai mantelnya.", "Di luar dingin.", "Matahari bersinar."),
         ("Pria itu ketinggalan bus.", "Dia membeli topi baru.", "Dia terlambat sampai di kantor."),
         ("Tanaman di kebun mati.", "Tidak ada yang menyiraminya.", "Hujan turun setiap hari."),
         ("Anak perempuan itu tertawa keras.", "Kakaknya menceritakan lelucon.", "Dia kehilangan mainannya."),
         ("Lampu padam.", "Kami membuka kulkas.", "Kami menyalakan lilin."),
         ("Jalan itu tertutup es.", "Burung-burung bernyanyi.", "Mobil-mobil melaju pelan."),
         ("Wanita itu minum segelas air.", "Dia mengantuk.", "Dia haus.")],
        [("Bayi itu menangis.", "Dia lapar.", "Dia sedang tidur."),
         ("Pintunya terkunci.", "Saya memakai kunci saya.", "Saya mengecat dinding."),
         ("Rotinya gosong.", "Tepungnya masih segar.", "Ovennya terlalu panas."),
         ("Mahasiswi itu belajar semalaman.", "Dia lupa namanya.", "Dia lulus ujian."),
         ("Es krimnya meleleh.", "Es krim itu dibiarkan di bawah matahari.", "Es krim itu disimpan di lemari pembeku."),
         ("Anak laki-laki itu lelah.", "Dia berlari maraton.", "Dia tidur lebih awal.")]),
 "tr": ([("Bardak masadan düştü.", "Yerde kırıldı.", "Suyla doldu."),
         ("Kız paltosunu giydi.", "Dışarısı soğuktu.", "Güneş parlıyordu."),
         ("Adam otobüsü kaçırdı.", "Yeni bir şapka aldı.", "İşe geç kaldı."),
         ("Bahçedeki bitkiler öldü.", "Kimse onları sulamadı.", "Her gün yağmur yağdı."),
         ("Kız yüksek sesle güldü.", "Kardeşi bir fıkra anlattı.", "Oyuncağını kaybetti."),
         ("Işıklar söndü.", "Buzdolabını açtık.", "Bir mum yaktık."),
         ("Yol buzla kaplıydı.", "Kuşlar öttü.", "Arabalar yavaş gitti."),
         ("Kadın bir bardak su içti.", "Uykusu gelmişti.", "Susamıştı.")],
        [("Bebek ağladı.", "Acıkmıştı.", "Uyuyordu."),
         ("Kapı kilitliydi.", "Anahtarımı kullandım.", "Duvarı boyadım."),
         ("Ekmek yanmıştı.", "Un tazeydi.", "Fırın çok sıcaktı."),
         ("Öğrenci bütün gece çalıştı.", "Adını unuttu.", "Sınavı geçti."),
         ("Dondurma eridi.", "Güneşte bırakılmıştı.", "Dondurucuda saklanmıştı."),
         ("Çocuk yorgundu.", "Maraton koştu.", "Erkenden yattı.")]),
 "zh": ([("杯子从桌子上掉了下来。", "它摔碎在地上。", "它装满了水。"),
         ("女孩穿上了外套。", "外面很冷。", "阳光明媚。"),
         ("那个男人错过了公交车。", "他买了一顶新帽子。", "他上班迟到了。"),
         ("花园里的植物死了。", "没有人给它们浇水。", "每天都下雨。"),
         ("小女孩大声地笑了。", "她哥哥讲了一个笑话。", "她丢了玩具。"),
         ("灯灭了。", "我们打开了冰箱。", "我们点了一支蜡烛。"),
         ("路面结了冰。", "鸟儿在唱歌。", "汽车开得很慢。"),
         ("那个女人喝了一杯水。", "她困了。", "她渴了。")],
        [("婴儿哭了。", "他饿了。", "他睡着了。"),
         ("门锁着。", "我用了我的钥匙。", "我粉刷了墙。"),
         ("面包烤焦了。", "面粉很新鲜。", "烤箱太热了。"),
         ("那个学生学习了一整夜。", "她忘了自己的名字。", "她通过了考试。"),
         ("冰淇淋化了。", "它被放在太阳下。", "它被放在冰柜里。"),
         ("男孩很累。", "他跑了一场马拉松。", "他早早上床睡觉了。")]),
}
SCHEMA = pa.schema([("premise", pa.string()), ("choice1", pa.string()), ("choice2", pa.string()),
                    ("question", pa.string()), ("label", pa.int32()), ("idx", pa.int32()), ("changed", pa.bool_())])
for lang, (test, val) in DATA.items():
    for split, rows, qs, ls in (("test", test, Q, L), ("validation", val, VQ, VL)):
        cols = {"premise": [r[0] for r in rows], "choice1": [r[1] for r in rows], "choice2": [r[2] for r in rows],
                "question": qs, "label": ls, "idx": list(range(len(rows))), "changed": [False] * len(rows)}
        (OUT / lang).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols, schema=SCHEMA), OUT / lang / f"{split}-00000-of-00001.parquet")
