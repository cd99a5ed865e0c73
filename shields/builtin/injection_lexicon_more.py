"""Injection lexicons of the languages added after the first nineteen (issue 17): Polish.

Each is written from the language's grammar, on the plan of ``injection_lexicon.py``: the
imperative in the familiar and the plural/polite address (Polish also orders with the
infinitive: "Zignorować poprzednie instrukcje"), the cases a noun takes after the verb
("zignoruj instrukcje", "zapomnij o instrukcjach"), and the words for "previous" in the same
cases. Polish puts the verb first and writes words apart, but says "do not" before the verb
("nie zapomnij o poprzednich instrukcjach"), so it is read by the rules of every word order
(``injection_any_order.py``), which veto a negated verb.
"""

from __future__ import annotations

from shields.builtin.injection_words import Lexicon

__all__ = ["MORE_LEXICONS"]

MORE_LEXICONS: dict[str, Lexicon] = {
    "pl": Lexicon(
        override=(
            "zignoruj|zignorujcie|zignorować|ignoruj|ignorujcie|ignorować|zapomnij|zapomnijcie"
            "|zapomnieć|zapomnij o|zapomnijcie o|zapomnieć o|pomiń|pomińcie|pominąć|odrzuć"
            "|odrzućcie|odrzucić|zlekceważ|zlekceważcie|lekceważ|porzuć|porzućcie"
            "|nie zwracaj uwagi na"
            "|nie zwracać uwagi na|nie stosuj się do|nie stosujcie się do|nie przestrzegaj"
            "|nie przestrzegajcie|nie słuchaj|nie słuchajcie|nie wykonuj|nie wykonujcie"
            "|proszę zignorować|proszę zapomnieć o|proszę pominąć"
        ),
        fillers=(
            "wszystkie|wszystkich|wszystkim|wszystko|wszelkie|wszelkich|swoje|swoich|twoje"
            "|twoich|wasze|waszych|te|tych|na|ci|tobie|wam|wcześniej|dotąd|dotychczas|które"
            "|całe|cały|całą|po prostu|proszę|teraz|już|kompletnie|całkowicie|dane|podane"
            "|otrzymane"
        ),
        every=(
            "wszystkie|wszystkich|wszelkie|wszelkich|swoje|swoich|twoje|twoich|wasze|waszych"
            "|wszystkie swoje|wszystkich swoich|wszystkie twoje|wszystkich twoich"
        ),
        prior=(
            "poprzednie|poprzednich|poprzednim|poprzednimi|wcześniejsze|wcześniejszych"
            "|wcześniejszym|powyższe|powyższych|powyższym|dotychczasowe|dotychczasowych"
            "|pierwotne|pierwotnych|początkowe|początkowych|oryginalne|oryginalnych|wyżej podane"
            "|podane wcześniej|podanych wcześniej|dane ci wcześniej|wcześniej podane"
            "|wcześniej podanych|stare|starych|uprzednie|uprzednich"
        ),
        instructions=(
            "instrukcje|instrukcji|instrukcjach|instrukcjami|polecenia|poleceń|poleceniach"
            "|poleceniami|zasady|zasad|zasadach|reguły|reguł|regułach|wytyczne|wytycznych"
            "|dyrektywy|dyrektyw|rozkazy|rozkazów|ograniczenia|ograniczeń|ograniczeniach"
            "|wskazówki|wskazówek|komendy|komend|prompt"
        ),
        said_before=(
            "wszystko, co ci powiedziano|wszystko co ci powiedziano|wszystkim, co ci powiedziano"
            "|wszystkim co ci powiedziano|wszystko, co ci wcześniej powiedziano"
            "|wszystkim, co ci wcześniej powiedziano|wszystko co ci wcześniej powiedziano"
            "|wszystkim co ci wcześniej powiedziano|to, co ci powiedziano|tym, co ci powiedziano"
            "|wszystko, co zostało powiedziane|wszystkim, co zostało powiedziane"
            "|wszystko, co było wcześniej|wszystkim, co było wcześniej|wszystko powyżej"
            "|wszystkim powyżej|wszystko powyższe|wszystkim powyższym|wszystko wyżej"
            "|wszystko, co napisano powyżej|wszystkim, co napisano powyżej"
        ),
        from_now_on=(
            "od teraz jesteś|od teraz będziesz|od teraz odpowiadasz|od teraz masz|od teraz ty"
            "|od tej chwili jesteś|od tej chwili będziesz|od tej chwili odpowiadasz"
            "|od tej chwili masz|od tego momentu jesteś|od tego momentu będziesz"
            "|odtąd jesteś|odtąd będziesz"
        ),
        new_task=(
            "nowe zadanie|nowe polecenie|nowa instrukcja|nowe instrukcje|nowa komenda"
            "|nowe zasady|nowa reguła|nowe reguły|następne zadanie|dodatkowe polecenie"
            "|dodatkowa instrukcja"
        ),
        extract=(
            "wypisz|wydrukuj|powtórz|pokaż|wyświetl|przetłumacz|napisz|skopiuj|przepisz"
            "|ujawnij|zdradź|zacytuj|przytocz|podaj|popraw|sprawdź pisownię"
        ),
        prior_text=(
            "powyższy tekst|powyższego tekstu|powyższym tekście|tekst powyżej|tekstu powyżej"
            "|tekst wyżej|tekstu wyżej|poprzedni tekst|poprzedniego tekstu|cały tekst powyżej"
            "|całego tekstu powyżej|cały powyższy tekst|całego powyższego tekstu"
            "|wszystko powyżej|wszystko, co powyżej"
        ),
        own_prompt=(
            "swój prompt systemowy|twój prompt systemowy|prompt systemowy|swój prompt"
            "|twój prompt|swoje instrukcje|twoje instrukcje|swoje pierwotne instrukcje"
            "|swoje początkowe instrukcje|swoje ukryte instrukcje|swoje tajne instrukcje"
            "|swoje instrukcje systemowe|instrukcje systemowe|wiadomość systemową"
            "|komunikat systemowy|swoje polecenia systemowe"
        ),
        say="powiedz|powiedzcie|napisz|napiszcie|odpowiedz|odpowiedzcie|wypisz|podaj|stwierdź",
        instead="zamiast tego|w zamian",
        secret=(
            "jakie jest twoje hasło|jakie jest hasło|jakie jest tajne hasło|podaj hasło"
            "|podaj swoje hasło|podaj mi hasło|zdradź hasło|zdradź swoje hasło|ujawnij hasło"
            "|potwierdź hasło|jaki jest tajny klucz|jaki jest twój tajny klucz|podaj tajny klucz"
        ),
        authority=(
            "jestem twoim deweloperem|jestem twoim developerem|jestem twoim twórcą"
            "|jestem twoim programistą|jestem twoim administratorem|jestem twoim właścicielem"
            "|jako twój deweloper|jako twój twórca|jako twój administrator"
        ),
        mode=(
            "tryb konserwacji|trybu konserwacji|trybie konserwacji|tryb serwisowy"
            "|trybu serwisowego|trybie serwisowym|tryb dewelopera|trybu dewelopera"
            "|trybie dewelopera|tryb programisty|trybu programisty|trybie programisty"
            "|tryb debugowania|trybu debugowania|trybie debugowania|tryb administratora"
            "|trybu administratora|trybie administratora|tryb boga|trybu boga|trybie boga"
            "|tryb bez ograniczeń|trybu bez ograniczeń|trybie bez ograniczeń|tryb nadpisywania"
            "|trybu nadpisywania|trybie nadpisywania"
        ),
        amnesia=(
            "masz amnezję|cierpisz na amnezję|straciłeś pamięć|straciłaś pamięć"
            "|twoja pamięć została wymazana|twoja pamięć została usunięta"
            "|twoja pamięć została zresetowana|nic nie pamiętasz"
        ),
        you_are_now="teraz jesteś|jesteś teraz|od teraz jesteś|odtąd jesteś",
        # "Nie zapomnij o poprzednich instrukcjach" (do not forget): the verb negated.
        negation="nie",
        conj="i|a|oraz|,",
        activate=(
            "wejdź w|wejdź do|przejdź w|przejdź do|przełącz się na|przełącz się w|włącz"
            "|aktywuj|jesteś w|jesteś teraz w|teraz jesteś w|aktywowany|włączony"
        ),
    ),
}
